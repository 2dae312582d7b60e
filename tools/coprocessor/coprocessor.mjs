// A coprocessor written to Apollo Router's documented coprocessor protocol (v1), for
// the gateway's tests: node:http only, no packages. `node coprocessor.mjs MODE`
// prints `listening PORT`, then answers each stage as MODE says. Every payload is
// checked as strictly as the protocol allows; a violation is recorded, answered 500,
// and listed by `GET /problems` (tests fail on any). `GET /log` lists what came in.
import http from 'node:http';

const mode = process.argv[2] ?? 'echo';
const log = [];
const problems = [];
const STAGES = ['RouterRequest', 'RouterResponse', 'SupergraphRequest', 'SupergraphResponse',
  'SubgraphRequest', 'SubgraphResponse'];
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

function check(p) {
  const bad = [];
  if (!isObject(p)) return ['the payload is not an object'];
  if (p.version !== 1) bad.push(`version ${JSON.stringify(p.version)}`);
  if (!STAGES.includes(p.stage)) bad.push(`stage ${JSON.stringify(p.stage)}`);
  if (typeof p.id !== 'string' || p.id === '') bad.push('id is not a non-empty string');
  const request = typeof p.stage === 'string' && p.stage.endsWith('Request');
  if (request && p.control !== 'continue') bad.push(`control ${JSON.stringify(p.control)} at a request stage`);
  if (!request && 'control' in p) bad.push('control sent at a response stage');
  if ('headers' in p) {
    if (!isObject(p.headers)) bad.push('headers is not an object');
    else for (const [k, v] of Object.entries(p.headers)) {
      if (k !== k.toLowerCase()) bad.push(`header name ${k} is not lowercase`);
      if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) bad.push(`header ${k} is not a list of strings`);
    }
  }
  if ('body' in p) {
    const text = p.stage === 'RouterRequest' || p.stage === 'RouterResponse';
    if (text && typeof p.body !== 'string') bad.push(`body at ${p.stage} is not a string`);
    if (!text && !isObject(p.body)) bad.push(`body at ${p.stage} is not an object`);
  }
  if ('context' in p && !(isObject(p.context) && isObject(p.context.entries))) bad.push('context is not {entries: {...}}');
  for (const key of ['sdl', 'path', 'method', 'serviceName', 'uri', 'subgraphRequestId']) {
    if (key in p && typeof p[key] !== 'string') bad.push(`${key} is not a string`);
  }
  if ('statusCode' in p && !Number.isInteger(p.statusCode)) bad.push('statusCode is not an integer');
  if (p.stage?.startsWith('Subgraph') && p.method !== undefined && p.method !== 'POST') bad.push(`method ${p.method}`);
  return bad;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The answer to `p` in this mode: the payload with some keys changed.
async function answer(p) {
  const out = { ...p };
  const entries = p.context?.entries;
  switch (`${mode}:${p.stage}`) {
    case 'headers:RouterRequest':
      out.headers = { ...p.headers, 'x-from-coprocessor': ['router'] };
      break;
    case 'headers:SubgraphRequest':
      out.headers = { ...p.headers, 'x-sub': ['rewritten'] };
      break;
    case 'break:RouterRequest':
      return { version: 1, stage: p.stage, control: { break: 401 }, body: 'not allowed',
        headers: { 'x-denied': ['yes'] } };
    case 'context:RouterRequest':
      out.context = { entries: { ...entries, 'test::greeting': 'hello' } };
      break;
    case 'context:SupergraphResponse': {
      const greeting = entries['test::greeting'];
      const kind = entries['apollo::supergraph::operation_kind'];
      out.body = { ...p.body, extensions: { greeting, kind } };
      // Left out of the answer: deleted from here on.
      const { ['test::greeting']: _, ...rest } = entries;
      out.context = { entries: rest };
      break;
    }
    case 'context:RouterResponse':
      out.headers = { ...p.headers, 'x-greeting-left': [String('test::greeting' in entries)] };
      break;
    case 'policy:SupergraphRequest': {
      const required = entries['apollo::authorization::required_policies'] ?? {};
      const decided = Object.fromEntries(Object.keys(required).map((k) => [k, k === 'admin']));
      out.context = { entries: { 'apollo::authorization::required_policies': decided } };
      break;
    }
    case 'slow:RouterRequest':
      await sleep(1500);
      break;
    case 'invalid:RouterRequest':
      return 'not a payload';
    case 'subgraph-break:SubgraphRequest':
      return { version: 1, stage: p.stage, control: { break: 403 }, body: 'blocked by policy' };
    default:
      break;
  }
  return out;
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    const body = req.url === '/problems' ? problems : log;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    let payload;
    const bad = [];
    if (req.method !== 'POST') bad.push(`method ${req.method}`);
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) bad.push('content-type is not JSON');
    try {
      payload = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      bad.push(...check(payload));
    } catch (e) {
      bad.push(`not JSON: ${e.message}`);
    }
    if (bad.length > 0) {
      problems.push({ stage: payload?.stage, bad });
      res.writeHead(500);
      res.end();
      return;
    }
    log.push(payload);
    const out = await answer(payload);
    const text = typeof out === 'string' ? out : JSON.stringify(out);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(text);
  });
});

server.listen(0, '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
