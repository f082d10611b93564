"""Live updates: the in-process event bus, the store wrapper that publishes every committed change,
and the change feed that shares them between replicas."""
