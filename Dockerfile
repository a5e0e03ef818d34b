# Gatehouse's container image: `docker build -t gatehouse .` (or `podman build`); see docs/deployment.md.
# The base is Node.js 20 on Debian 12 (bookworm), slim variant; another tag of the same line can be
# given with --build-arg NODE_IMAGE=… (a digest, for reproducible builds).
# test/deploy.test.ts runs this file's package and install commands and its ENTRYPOINT/CMD outside a
# container, so keep them shell commands of their own RUN lines (see that test).
ARG NODE_IMAGE=node:20-bookworm-slim

# 1. Build: every dependency (TypeScript, Vite), the server and the console, then the package as
#    `npm pack` makes it (package.json "files") unpacked into $APP_DIR, with the lock file npm pack
#    leaves out (the production install below installs exactly the locked versions).
FROM ${NODE_IMAGE} AS build
ARG APP_DIR=/app
ARG PACK_DIR=/tmp/pack
# A compiler, should a native module (better-sqlite3) have no prebuilt binary for this platform.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build
RUN mkdir -p "$PACK_DIR" "$APP_DIR" && npm pack --pack-destination "$PACK_DIR" && tar -xzf "$PACK_DIR"/gatehouse-*.tgz -C "$APP_DIR" --strip-components=1 && cp package-lock.json "$APP_DIR"/

# 2. Production dependencies only, installed into the unpacked package (from the build's npm cache
#    where it can; the compiler stays behind in this stage).
FROM build AS deps
WORKDIR /app
RUN npm ci --omit=dev --no-audit --no-fund --prefer-offline

# 3. Runtime: the package and its production dependencies, run as the unprivileged `node` user.
FROM ${NODE_IMAGE} AS runtime
# MALLOC_ARENA_MAX=2 and the 32 MB semi-spaces below are what `npm start` runs with (bench/NOTES.md §8).
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    GATEHOUSE_DATA_DIR=/data \
    PORT=8080 \
    MEDIA_PORT=8081
WORKDIR /app
COPY --from=deps /app /app
# The data directory: SQLite database, generated master key and bootstrap keys, usage journal,
# media files, interns' directories. Owned by `node` (uid 1000 in the official images).
RUN mkdir -p /data && chown 1000:1000 /data
USER 1000:1000
VOLUME ["/data"]
# The gateway, and the media service (`serve` runs it too; `media` runs it alone). Metrics (9464)
# listen on loopback unless GATEHOUSE_METRICS_HOST says otherwise, so they are not exposed here.
EXPOSE 8080 8081
# Node's fetch (the slim image has no curl). The `media` and `worker` commands need their own check
# (compose.yaml): the media service answers /health on MEDIA_PORT, the worker has no HTTP port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--max-semi-space-size=32", "dist/cli.js"]
CMD ["serve"]
