from typing import Any, Optional, Union

from .async_base_client import AsyncBaseClient
from .base_model import UNSET, UnsetType
from .chain import Chain
from .declare_claim import DeclareClaim
from .declare_evidence import DeclareEvidence
from .enums import ChainKind, NodeLabel
from .health import Health
from .input_types import (
    DeclareClaimInput,
    DeclareEvidenceInput,
    ObserveExecutionInput,
    ObserveSessionFirstMessageInput,
    ObserveToolCallInput,
)
from .observe_execution import ObserveExecution
from .observe_session_first_message import ObserveSessionFirstMessage
from .observe_tool_call import ObserveToolCall
from .session_graph import SessionGraph
from .trace import Trace


def gql(q: str) -> str:
    return q


class ScienceMemoryClient(AsyncBaseClient):
    async def declare_evidence(
        self, input: DeclareEvidenceInput, **kwargs: Any
    ) -> DeclareEvidence:
        query = gql("""
            mutation DeclareEvidence($input: DeclareEvidenceInput!) {
              declareEvidence(input: $input) {
                __typename
                ... on EvidenceDeclared {
                  evidenceId
                  evidence {
                    id
                    sourcePaperLink
                  }
                }
                ... on DeclareRejected {
                  instruction
                }
                ... on Error {
                  code
                  message
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="DeclareEvidence", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return DeclareEvidence.model_validate(data)

    async def declare_claim(
        self, input: DeclareClaimInput, **kwargs: Any
    ) -> DeclareClaim:
        query = gql("""
            mutation DeclareClaim($input: DeclareClaimInput!) {
              declareClaim(input: $input) {
                __typename
                ... on ClaimDeclared {
                  claimId
                  chipMap {
                    alias
                    kind
                    id
                    nodeId
                    version
                  }
                }
                ... on DeclareRejected {
                  instruction
                  alias
                }
                ... on Error {
                  code
                  message
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="DeclareClaim", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return DeclareClaim.model_validate(data)

    async def observe_session_first_message(
        self, input: ObserveSessionFirstMessageInput, **kwargs: Any
    ) -> ObserveSessionFirstMessage:
        query = gql("""
            mutation ObserveSessionFirstMessage($input: ObserveSessionFirstMessageInput!) {
              observeSessionFirstMessage(input: $input) {
                ...ObserveOutcome
              }
            }

            fragment ObserveOutcome on ObserveResult {
              __typename
              ... on Observed {
                written
                nodeIds
              }
              ... on Error {
                code
                message
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="ObserveSessionFirstMessage",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ObserveSessionFirstMessage.model_validate(data)

    async def observe_execution(
        self, input: ObserveExecutionInput, **kwargs: Any
    ) -> ObserveExecution:
        query = gql("""
            mutation ObserveExecution($input: ObserveExecutionInput!) {
              observeExecution(input: $input) {
                ...ObserveOutcome
              }
            }

            fragment ObserveOutcome on ObserveResult {
              __typename
              ... on Observed {
                written
                nodeIds
              }
              ... on Error {
                code
                message
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query,
            operation_name="ObserveExecution",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ObserveExecution.model_validate(data)

    async def observe_tool_call(
        self, input: ObserveToolCallInput, **kwargs: Any
    ) -> ObserveToolCall:
        query = gql("""
            mutation ObserveToolCall($input: ObserveToolCallInput!) {
              observeToolCall(input: $input) {
                ...ObserveOutcome
              }
            }

            fragment ObserveOutcome on ObserveResult {
              __typename
              ... on Observed {
                written
                nodeIds
              }
              ... on Error {
                code
                message
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="ObserveToolCall", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return ObserveToolCall.model_validate(data)

    async def health(self, **kwargs: Any) -> Health:
        query = gql("""
            query Health {
              health {
                status
                backend
                enabled
                pendingWrites
              }
            }
            """)
        variables: dict[str, object] = {}
        response = await self.execute(
            query=query, operation_name="Health", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Health.model_validate(data)

    async def session_graph(self, session_id: str, **kwargs: Any) -> SessionGraph:
        query = gql("""
            query SessionGraph($sessionId: String!) {
              session(sessionId: $sessionId) {
                __typename
                ... on Session {
                  sessionId
                  chain {
                    __typename
                    id
                    label
                  }
                  edges {
                    total
                    edges {
                      type
                      source
                      target
                    }
                  }
                }
                ... on Error {
                  code
                  message
                }
              }
            }
            """)
        variables: dict[str, object] = {"sessionId": session_id}
        response = await self.execute(
            query=query, operation_name="SessionGraph", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return SessionGraph.model_validate(data)

    async def chain(
        self,
        node_id: str,
        kind: ChainKind,
        session_id: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> Chain:
        query = gql("""
            query Chain($nodeId: ID!, $kind: ChainKind!, $sessionId: String) {
              getChain(nodeId: $nodeId, kind: $kind, sessionId: $sessionId) {
                __typename
                ... on Chain {
                  total
                  nodes {
                    __typename
                    id
                    label
                  }
                }
                ... on Error {
                  code
                  message
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "nodeId": node_id,
            "kind": kind,
            "sessionId": session_id,
        }
        response = await self.execute(
            query=query, operation_name="Chain", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Chain.model_validate(data)

    async def trace(
        self,
        node_id: str,
        target_label: Union[Optional[NodeLabel], UnsetType] = UNSET,
        session_id: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> Trace:
        query = gql("""
            query Trace($nodeId: ID!, $targetLabel: NodeLabel, $sessionId: String) {
              traceProvenance(
                nodeId: $nodeId
                targetLabel: $targetLabel
                sessionId: $sessionId
              ) {
                __typename
                ... on ProvenanceTrace {
                  broken
                  truncated
                  reason
                  path {
                    hop
                    viaEdge
                    reachedFrom
                    node {
                      __typename
                      id
                      label
                    }
                  }
                  chain {
                    hop
                    viaEdge
                    reachedFrom
                    isTerminal
                    node {
                      __typename
                      id
                      label
                    }
                  }
                }
                ... on Error {
                  code
                  message
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "nodeId": node_id,
            "targetLabel": target_label,
            "sessionId": session_id,
        }
        response = await self.execute(
            query=query, operation_name="Trace", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Trace.model_validate(data)
