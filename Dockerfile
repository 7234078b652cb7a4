# Coord server image. Runs `src/server.ts` with tsx (a runtime dependency), as the unprivileged
# `node` user. Point it at Postgres with DATABASE_URL (see docker-compose.yml); without it, it
# starts the embedded Postgres in /data (COORD_DATA_DIR). The image carries the `coord` CLI too;
# its task graph runner (coord graph run/advance/…) needs git and the repository, so it belongs on
# the agents' machines (README "The runner"), not in this image.
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    COORD_DATA_DIR=/data

# Dependencies first, for layer caching (the sdk workspace's manifest is part of the lockfile).
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/package.json
# A patched dependency (postgres.js: a crash when a connection closes mid-write; patches/README.md).
COPY patches ./patches
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json drizzle.config.ts ./
COPY src ./src
COPY migrations ./migrations
COPY sdk ./sdk
COPY cli ./cli
COPY mcp ./mcp
COPY bin ./bin
# The dashboard, built and committed (ui/dist); served at /ui/.
COPY ui/dist ./ui/dist

RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000

# Liveness, not readiness: /healthz is 200 while the process serves; /readyz is 503 during a
# database outage, and an orchestrator that restarts on it would restart every replica for an
# outage a restart cannot fix (README "What a client sees during an outage"). Route on /readyz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"

CMD ["node", "--import", "tsx", "src/server.ts"]
