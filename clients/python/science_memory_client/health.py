from pydantic import Field

from .base_model import BaseModel
from .enums import Backend, HealthStatus


class Health(BaseModel):
    health: "HealthHealth"


class HealthHealth(BaseModel):
    status: HealthStatus
    backend: Backend
    enabled: bool
    pending_writes: int = Field(alias="pendingWrites")


Health.model_rebuild()
