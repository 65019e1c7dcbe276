# lexembed server image: `lexembed serve` on the bundled models, as a non-root user, port 8080.
#
#   docker build -t lexembed .
#   docker run --rm -p 8080:8080 --read-only -v lexembed-data:/data lexembed
#
# BASE: a Node LTS image on Debian (default the official one). Where registry images cannot be
# pulled, deploy/image/make-base.sh builds a local one: --build-arg BASE=lexembed-base:bookworm-node24.
ARG BASE=node:24-bookworm-slim

# 1. Compile src/ to dist/ (needs the dev dependencies: TypeScript and the types).
FROM ${BASE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

# 2. Production dependencies only; onnxruntime-node keeps its Linux x64 binding alone.
FROM ${BASE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/onnxruntime-node/bin/napi-v*/darwin node_modules/onnxruntime-node/bin/napi-v*/win32 \
           node_modules/onnxruntime-node/bin/napi-v*/linux/arm64 \
 && npm cache clean --force 2>/dev/null; rm -rf /root/.npm

# 3. The runtime: dist/, production node_modules, the CLI and both bundled model folders.
FROM ${BASE}
WORKDIR /app
ENV NODE_ENV=production \
    LEXEMBED_USE_DIST=1 \
    LEXEMBED_HOST=0.0.0.0 \
    LEXEMBED_PORT=8080 \
    LEXEMBED_DATA_DIR=/data \
    LEXEMBED_IN_CONTAINER=1
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY models/legal-2-embedder ./models/legal-2-embedder
COPY models/legal-2-embedder-static ./models/legal-2-embedder-static
# The file key store (and its first-start dev key) lives in the volume; the root filesystem can be read-only.
RUN mkdir -p /data && chown 10001:10001 /data
VOLUME /data
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.LEXEMBED_PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 and runs `lexembed serve` itself, so `docker stop` (SIGTERM) reaches the server, which drains.
ENTRYPOINT ["node", "/app/bin/lexembed.js"]
CMD ["serve"]
