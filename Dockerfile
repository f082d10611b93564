FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY resolvers ./resolvers
RUN pip install --no-cache-dir . && useradd --create-home memory && mkdir /data && chown memory /data
USER memory
ENV SCIENCE_AGENT_MEMORY_GRAPH_DATA_DIR=/data
EXPOSE 17674
CMD ["science-memory", "serve"]
