/**
 * Graceful drain on close. With Fastify's `forceCloseConnections: true`, `close()`
 * destroyed every socket at once, in-flight requests included, whose writes then still committed:
 * 8 of 8 writers got socket errors for items that were stored. Now `app.close()` (SIGTERM, SIGINT,
 * tests) does this instead:
 *
 * 1. From the first moment (a `preClose` hook, registered before any other), every new request is
 *    answered 503 problem+json `shutting_down` with `Retry-After: 1` and `Connection: close`; it
 *    runs nothing. That covers requests on kept-alive or pipelined connections; new connections
 *    are refused once Fastify has closed the listener, right after the `preClose` hooks.
 * 2. The SSE streams end (the events module's own `preClose` hook; clients resume elsewhere with
 *    `Last-Event-ID`).
 * 3. In-flight requests run to the end. Node's `server.close()` closes the connections idle at that
 *    moment (`forceCloseConnections: 'idle'`); a connection whose request finishes during the drain
 *    stays open until step 4, so a client that sends its next request on it gets the 503 of step 1
 *    rather than a reset (forcing `Connection: close` on in-flight responses would also drop a
 *    request already pipelined behind them, unanswered).
 * 4. When no request is in flight, or after `timeoutMs`, every connection still open is closed
 *    (idle kept-alive sockets, requests still running at the deadline) and Fastify's close
 *    completes. A request racing that moment sees its connection reset, unprocessed. The count of requests cut at the deadline is in `lastDrain(app)`; the server
 *    then ends the database pool at once, so their transactions roll back instead of committing
 *    after their clients saw the connection drop.
 */
import type { FastifyInstance } from 'fastify';
import { problemBody } from './problem.js';

export interface DrainResult {
  /** In-flight requests whose connections were closed at the deadline. */
  cut: number;
  /** Milliseconds from the start of the close until no request was in flight (or the deadline). */
  ms: number;
}

interface DrainState {
  draining: boolean;
  inFlight: number;
  settle?: () => void;
  result?: DrainResult;
}

const states = new WeakMap<FastifyInstance, DrainState>();

/**
 * Registers the drain on `app`. Call it once, before any route or other hook, so the 503 comes
 * before authentication and every other `onRequest` hook. `timeoutMs` bounds how long a close
 * waits for in-flight requests (`COORD_DRAIN_TIMEOUT`; 0 = do not wait).
 */
export function registerDrain(app: FastifyInstance, timeoutMs: number): void {
  const state: DrainState = { draining: false, inFlight: 0 };
  states.set(app, state);

  app.addHook('onRequest', (_request, reply, done) => {
    if (state.draining) {
      reply
        .status(503)
        .type('application/problem+json')
        .header('retry-after', '1')
        .header('connection', 'close')
        .send(
          problemBody(
            'shutting_down',
            'this Coord replica is shutting down and takes no new requests; retry after Retry-After seconds (another replica answers, or this one once restarted)',
            503,
          ),
        );
      return;
    }
    state.inFlight++;
    let counted = true;
    // 'close' fires once the response is sent or the connection is gone, whichever comes first.
    reply.raw.once('close', () => {
      if (!counted) return;
      counted = false;
      state.inFlight--;
      if (state.draining && state.inFlight === 0) state.settle?.();
    });
    done();
  });
  app.addHook('preClose', (done) => {
    state.draining = true;
    const started = Date.now();
    const finished = new Promise<'idle' | 'deadline'>((resolve) => {
      state.settle = () => resolve('idle');
      if (state.inFlight === 0) resolve('idle');
      setTimeout(() => resolve('deadline'), timeoutMs).unref();
    });
    void finished.then((how) => {
      state.result = { cut: how === 'deadline' ? state.inFlight : 0, ms: Date.now() - started };
      // Whatever is still connected now is either idle or past the deadline.
      app.server.closeAllConnections();
    });
    done();
  });
}

/** The outcome of the last completed drain of `app`, or undefined before one has finished. */
export function lastDrain(app: FastifyInstance): DrainResult | undefined {
  return states.get(app)?.result;
}
