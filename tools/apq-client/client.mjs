// Test client only: runs operations through Apollo Client's persisted-queries link
// against the gateway URLs given and prints, as JSON, each operation's result and the
// HTTP exchanges the link made (method, whether the text and the hash were sent, the
// answer's error codes). Usage: node client.mjs APQ_ON_URL APQ_OFF_URL
import { createHash } from "node:crypto";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client/core/index.js";
import { createPersistedQueryLink } from "@apollo/client/link/persisted-queries/index.js";

const [url, offUrl] = process.argv.slice(2);
const sha256 = (text) => createHash("sha256").update(text).digest("hex");

function client(uri, exchanges, useGETForHashedQueries) {
  const recordingFetch = async (target, init) => {
    const u = new URL(target);
    const sent = init.method === "GET" ? Object.fromEntries(u.searchParams) : JSON.parse(init.body);
    const extensions = typeof sent.extensions === "string" ? JSON.parse(sent.extensions) : sent.extensions;
    const response = await fetch(target, init);
    const body = await response.clone().json();
    exchanges.push({
      method: init.method,
      query: sent.query ?? null,
      hash: extensions?.persistedQuery?.sha256Hash ?? null,
      status: response.status,
      codes: (body.errors ?? []).map((e) => e.extensions?.code ?? null),
    });
    return response;
  };
  // GET needs a header that only a preflighted browser request can carry (CSRF).
  const http = new HttpLink({ uri, fetch: recordingFetch, headers: { "apollo-require-preflight": "true" } });
  const link = createPersistedQueryLink({ sha256, useGETForHashedQueries }).concat(http);
  return new ApolloClient({ link, cache: new InMemoryCache({ addTypename: false }) });
}

async function run(apollo, text) {
  const result = await apollo.query({ query: gql(text), fetchPolicy: "no-cache" });
  return result.data;
}

const out = {};
for (const [name, uri, get] of [["post", url, false], ["get", url, true], ["off", offUrl, false]]) {
  const exchanges = [];
  const apollo = client(uri, exchanges, get);
  const text = `query ${name === "get" ? "Names" : "Users"}_${name} { users { ${name === "get" ? "name" : "id"} } }`;
  const first = await run(apollo, text);
  const second = await run(apollo, text);
  out[name] = { first, second, exchanges };
}
console.log(JSON.stringify(out));
