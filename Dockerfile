# taskhook's container image. docs/deployment.md ("Containers") says how to build and run it;
# scripts/check-container.sh proves it.
#
#   docker build -t taskhook .
#   docker run -d -p 127.0.0.1:8080:8080 -v taskhook-data:/data taskhook
#
# Both stages start from BASE_IMAGE, so the same file builds against a base provided locally
# (docker build --build-arg BASE_IMAGE=...). The build needs the base, this context and the npm registry.
ARG BASE_IMAGE=node:22-bookworm-slim

FROM ${BASE_IMAGE} AS build
# A C++ toolchain for better-sqlite3, compiled from source against the base's Node.js headers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
ENV npm_config_nodedir=/usr/local npm_config_build_from_source=true npm_config_update_notifier=false \
    npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
COPY sdks/typescript/package.json sdks/typescript/
# No lifecycle scripts yet (the package's `prepare` builds, before the sources are here); then the
# one SQLite driver this Node.js loads (src/db/sqlite-driver.ts) is compiled, without its build
# leftovers and sources.
RUN npm ci --ignore-scripts \
 && driver=$(node -p "Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-n22' : 'better-sqlite3'") \
 && npm rebuild "$driver" \
 && node -e "require('$driver')(':memory:').prepare('select 1').get()" \
 && find node_modules/better-sqlite3 node_modules/better-sqlite3-n22 -mindepth 1 -maxdepth 1 \
      \( -name deps -o -name src \) -exec rm -rf {} + \
 && find node_modules/better-sqlite3*/build -mindepth 1 -maxdepth 2 ! -name Release ! -name better_sqlite3.node \
      -exec rm -rf {} +
COPY . .
RUN npm run build \
 && npm prune --omit=dev \
 && rm -rf node_modules/@taskhook node_modules/.package-lock.json \
 && find dist \( -name '*.map' -o -name '*.d.ts' \) -delete \
 && chmod 755 dist/cli/index.js

FROM ${BASE_IMAGE}
ARG TASKHOOK_VERSION=0.1.0
ARG SOURCE_URL=https://github.com/taskhook/taskhook
LABEL org.opencontainers.image.title="taskhook" \
      org.opencontainers.image.description="Put AI agents to work over plain HTTP" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.version="${TASKHOOK_VERSION}" \
      org.opencontainers.image.licenses="MIT"
WORKDIR /app
# Only what runs: the build, production dependencies, the manifest, the license, and the
# OpenTelemetry protocol definitions the OTLP/protobuf ingest reads at start (with their license).
COPY --from=build /src/package.json /src/LICENSE ./
COPY --from=build /src/vendor/opentelemetry-proto ./vendor/opentelemetry-proto
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# The data directory is the only place the service writes (the root filesystem may be read-only).
RUN ln -s /app/dist/cli/index.js /usr/local/bin/taskhook \
 && mkdir -m 700 /data && chown node:node /data
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 TASKHOOK_DATA_DIR=/data
USER node
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node.js is PID 1 (no shell in between): SIGTERM stops accepting connections, lets in-flight requests
# finish and exits 0 (within TASKHOOK_SHUTDOWN_TIMEOUT_MS). The flags are `npm start`'s.
ENTRYPOINT ["node", "--max-semi-space-size=8", "/app/dist/cli/index.js"]
CMD ["serve"]
