// Test client only: runs one GraphQL operation (usually a subscription) through the real
// graphql-ws client (graphql-transport-ws, WebSocket from the `ws` package), Apollo's legacy
// subscriptions-transport-ws client (the `graphql-ws` subprotocol), the real graphql-sse
// client (distinct connections mode), or Apollo multipart subscriptions read by meros
// (`Accept: multipart/mixed;subscriptionSpec="1.0"`, heartbeat parts skipped), and prints what
// the library delivers.
//
// Usage: scripts/node-tool.sh subscription-client/client.mjs --protocol ws|legacy|sse|multipart
//          --url URL --query 'subscription {...}' [--variables JSON] [--operation-name NAME]
//          [--events N] [--timeout-ms T] [--subscribers K] [--connection-params JSON]
//          [--report-close] [--keep-alive-timeout-ms T]
//
// --connection-params is the connection_init payload (ws, legacy). --report-close (ws, legacy)
// keeps the socket open after the subscription ends and prints the server's close as a last
// line {"closed":CODE,"reason":"..."}. --keep-alive-timeout-ms is the legacy client's `timeout`:
// it closes the socket when no `ka` keep-alive came for that long (default 30000).
//
// Output, one JSON object per line: each payload as received ({"data":...} / {"errors":...}),
// then {"done":"complete","by":"server"|"client"} (the server completed, or the client
// stopped after --events N) or {"done":"error","error":...}. With --subscribers K the K
// subscriptions run concurrently (one connection each) and every line is wrapped:
// {"sub":I,"payload":...} / {"sub":I,"done":...}. Exit status: 0 when every subscription
// completed, 1 on an error (protocol error, close code, network error), 2 on timeout,
// 64 on bad arguments.
import { createClient as createWsClient } from 'graphql-ws';
import { createClient as createSseClient } from 'graphql-sse';
import WebSocket from 'ws';
import { SubscriptionClient } from 'subscriptions-transport-ws';
import { meros } from 'meros/browser';

function usage(message) {
  process.stderr.write(`subscription-client: ${message}\n`);
  process.exit(64);
}

function parseArgs(argv) {
  const opts = { protocol: null, url: null, query: null, variables: undefined, operationName: undefined, events: null, timeoutMs: 10000, subscribers: null, connectionParams: undefined, reportClose: false, keepAliveTimeoutMs: 30000 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    const count = (name, min) => {
      const n = Number(value());
      if (!Number.isInteger(n) || n < min) usage(`${name} must be an integer >= ${min}`);
      return n;
    };
    switch (flag) {
      case '--protocol': opts.protocol = value(); break;
      case '--url': opts.url = value(); break;
      case '--query': opts.query = value(); break;
      case '--operation-name': opts.operationName = value(); break;
      case '--variables':
        try { opts.variables = JSON.parse(value()); } catch (e) { usage(`--variables is not JSON: ${e.message}`); }
        break;
      case '--events': opts.events = count('--events', 1); break;
      case '--timeout-ms': opts.timeoutMs = count('--timeout-ms', 1); break;
      case '--subscribers': opts.subscribers = count('--subscribers', 1); break;
      case '--connection-params':
        try { opts.connectionParams = JSON.parse(value()); } catch (e) { usage(`--connection-params is not JSON: ${e.message}`); }
        break;
      case '--report-close': opts.reportClose = true; break;
      case '--keep-alive-timeout-ms': opts.keepAliveTimeoutMs = count('--keep-alive-timeout-ms', 1); break;
      default: usage(`unknown argument ${flag}`);
    }
  }
  if (!['ws', 'legacy', 'sse', 'multipart'].includes(opts.protocol)) usage('--protocol must be ws, legacy, sse or multipart');
  if (opts.reportClose && opts.subscribers !== null) usage('--report-close takes one subscription');
  if (!opts.url) usage('--url is required');
  if (!opts.query) usage('--query is required');
  return opts;
}

// Errors as JSON: close events keep their code and reason, GraphQL error lists stay lists.
function describe(err) {
  if (Array.isArray(err)) return err;
  if (err && typeof err === 'object' && 'code' in err && 'reason' in err) {
    return { close: err.code, reason: String(err.reason) };
  }
  if (err instanceof Error) return { message: err.message };
  // ws delivers connection failures as an ErrorEvent wrapping the Error.
  if (err && err.error instanceof Error) return { message: err.error.message };
  if (err && typeof err.message === 'string') return { message: err.message };
  return { message: String(err) };
}

// `closed` resolves with the socket's close event (ws, legacy).
function wsClient(opts, closed) {
  return createWsClient({
    url: opts.url,
    webSocketImpl: WebSocket,
    lazy: true,
    retryAttempts: 0,
    shouldRetry: () => false,
    connectionParams: opts.connectionParams,
    // With --report-close the client must not close the socket itself once idle.
    lazyCloseTimeout: opts.reportClose ? 3600000 : 0,
    on: { closed: closed },
  });
}

// The legacy client: one socket, opened at once, never reconnecting; a refused
// connection_init (connection_error) and a closed socket fail the subscription, which the
// library itself would leave waiting.
function legacyClient(opts, closed) {
  let current = null;
  const fail = (err) => { if (current) current.error(err); };
  const client = new SubscriptionClient(
    opts.url,
    {
      reconnect: false,
      connectionParams: opts.connectionParams,
      timeout: opts.keepAliveTimeoutMs,
      connectionCallback: (error) => { if (error) fail({ message: error.message ?? JSON.stringify(error) }); },
    },
    WebSocket,
  );
  client.client.addEventListener('close', (event) => {
    closed(event);
    fail({ close: event.code, reason: String(event.reason) });
  });
  return {
    subscribe(payload, sink) {
      current = sink;
      const subscription = client.request(payload).subscribe({
        next: (value) => sink.next(value),
        // The library hands on the first GraphQL error of an `error` message, as it is:
        // printed as a list like the other clients' errors.
        error: (err) => sink.error([err]),
        complete: () => sink.complete(),
      });
      return () => subscription.unsubscribe();
    },
    dispose() { client.close(); },
  };
}

function sseClient(opts) {
  return createSseClient({ url: opts.url, retryAttempts: 0 });
}

// Apollo multipart subscriptions with the same subscribe/dispose shape as the other clients.
function multipartClient({ url }) {
  return {
    subscribe(payload, sink) {
      const controller = new AbortController();
      (async () => {
        try {
          const response = await fetch(url, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'multipart/mixed;subscriptionSpec="1.0",application/json;q=0.9',
            },
            body: JSON.stringify(payload),
            signal: controller.signal,
          });
          const parts = await meros(response);
          if (!(Symbol.asyncIterator in Object(parts))) {
            const body = await response.text();
            sink.error({ message: `not a multipart response (HTTP ${response.status}): ${body}` });
            return;
          }
          for await (const part of parts) {
            if (!part.json) {
              sink.error({ message: `a part that is not JSON: ${part.body}` });
              return;
            }
            const body = part.body;
            // Transport-level errors come as {"payload":null,"errors":[...]} and end the stream.
            if (body.errors) {
              sink.error(body.errors);
              return;
            }
            if (body.payload === undefined) continue; // heartbeat {}
            sink.next(body.payload);
          }
          sink.complete();
        } catch (err) {
          if (!controller.signal.aborted) sink.error(err);
        }
      })();
      return () => controller.abort();
    },
    dispose() {},
  };
}

// Runs one subscription; resolves with {done, ...} and calls emit(payload) per event. With
// --report-close the result also holds the server's close event ({..., closed, reason}).
function run(opts, emit) {
  const clients = { ws: wsClient, legacy: legacyClient, sse: sseClient, multipart: multipartClient };
  let onClose;
  const closed = new Promise((resolve) => { onClose = resolve; });
  const client = clients[opts.protocol](opts, (event) => onClose(event));
  const payload = { query: opts.query };
  if (opts.variables !== undefined) payload.variables = opts.variables;
  if (opts.operationName !== undefined) payload.operationName = opts.operationName;
  return new Promise((resolve) => {
    let received = 0;
    let finished = false;
    let unsubscribe = () => {};
    const finish = (result) => {
      if (finished) return;
      finished = true;
      if (opts.reportClose) {
        // The server's close, not one of our own: the socket is left open until it comes.
        closed.then((event) => resolve({ ...result, closed: event.code, reason: String(event.reason) }));
        return;
      }
      unsubscribe();
      Promise.resolve(client.dispose()).catch(() => {}).finally(() => resolve(result));
    };
    unsubscribe = client.subscribe(payload, {
      next: (value) => {
        if (finished) return;
        emit(value);
        received += 1;
        if (opts.events !== null && received >= opts.events) finish({ done: 'complete', by: 'client' });
      },
      error: (err) => finish({ done: 'error', error: describe(err) }),
      complete: () => finish({ done: 'complete', by: 'server' }),
    });
  });
}

const opts = parseArgs(process.argv.slice(2));
if (opts.reportClose && !['ws', 'legacy'].includes(opts.protocol)) usage('--report-close is for ws and legacy');
const write = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const timer = setTimeout(() => {
  write({ done: 'error', error: { message: `timeout after ${opts.timeoutMs} ms` } });
  process.exit(2);
}, opts.timeoutMs);

let failed = false;
if (opts.subscribers === null) {
  const result = await run(opts, write);
  write(result);
  failed = result.done !== 'complete';
} else {
  const results = await Promise.all(
    Array.from({ length: opts.subscribers }, (_, sub) =>
      run(opts, (payload) => write({ sub, payload })).then((result) => {
        write({ sub, ...result });
        return result;
      }),
    ),
  );
  failed = results.some((r) => r.done !== 'complete');
}
clearTimeout(timer);
process.exit(failed ? 1 : 0);
