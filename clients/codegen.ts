// GraphQL Code Generator: typed documents for the operations in operations/*.graphql,
// validated against the gateway's schema (a field the schema drops fails the generation).
import type { CodegenConfig } from "@graphql-codegen/cli";

// CODEGEN_SCHEMA and CODEGEN_OUTPUT let a test run the generation against another schema.
const output = process.env["CODEGEN_OUTPUT"] ?? "src/generated/graphql.ts";

const config: CodegenConfig = {
  schema: process.env["CODEGEN_SCHEMA"] ?? "../schema.graphql",
  documents: ["operations/*.graphql"],
  overwrite: true,
  errorsOnly: true,
  generates: {
    [output]: {
      plugins: ["typescript-operations", "typed-document-node"],
      config: {
        enumsAsTypes: true,
        strictScalars: true,
        useTypeImports: true,
        scalars: {
          DateTime: "string",
          Date: "string",
          JSON: "unknown",
          _Any: "unknown",
        },
      },
    },
  },
};

export default config;
