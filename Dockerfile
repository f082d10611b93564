# The gateway image. The first stage installs the npm packages pinned in
# clients/package-lock.json and copies GraphiQL's and the explorer's files (tools/copy-static.sh, as
# tools/setup-clients.sh does), so the image serves its playground and explorer offline.
FROM node:20-slim AS playground
WORKDIR /src
COPY clients/package.json clients/package-lock.json ./clients/
RUN npm ci --prefix clients --ignore-scripts --no-audit --no-fund --loglevel=error
COPY clients/explorer ./clients/explorer
COPY tools/copy-static.sh ./tools/
RUN bash tools/copy-static.sh

FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY gateway ./gateway
COPY resolvers ./resolvers
COPY --from=playground /src/gateway/static/graphiql ./gateway/static/graphiql
COPY --from=playground /src/gateway/static/explorer ./gateway/static/explorer
RUN pip install --no-cache-dir . && useradd --create-home memory && mkdir /data && chown memory /data
USER memory
ENV SCIENCE_AGENT_MEMORY_GRAPH_DATA_DIR=/data
EXPOSE 17674
CMD ["science-memory", "serve"]
