"""What the gateway tells its operators: logs, traces, Prometheus metrics, and the one place that
redacts secrets from anything leaving the process."""
