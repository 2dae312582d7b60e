// Test client only: asks the gateway for one operation with @defer through two real
// clients and prints, as JSON, what each saw.
// - apollo: Apollo Client (HttpLink, which sends the multipart Accept header for
//   operations with @defer): every result its watchQuery emitted.
// - meros: the raw multipart parts, read by meros from a fetch Response.
// Apollo Client's results are read until one carries DONE_MARKER (a field name only
// the deferred fragments select).
// Usage: node client.mjs URL QUERY_TEXT DONE_MARKER
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client/core/index.js";
import { meros } from "meros/browser";

const [url, text, marker] = process.argv.slice(2);

async function withApollo() {
  const apollo = new ApolloClient({
    link: new HttpLink({ uri: url }),
    cache: new InMemoryCache(),
  });
  const results = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no final result within 20 s")), 20000);
    apollo.watchQuery({ query: gql(text), fetchPolicy: "no-cache" }).subscribe({
      next(result) {
        // The cache adds __typename to what it asks; left out, to compare with the plain answer.
        const data = JSON.parse(JSON.stringify(result.data ?? null, (k, v) => (k === "__typename" ? undefined : v)));
        results.push({ data, loading: result.loading, errors: result.errors ?? null });
        if (JSON.stringify(data).includes(`"${marker}"`)) {
          clearTimeout(timer);
          resolve();
        }
      },
      error(e) {
        clearTimeout(timer);
        reject(e);
      },
    });
  });
  return results;
}

async function withMeros() {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "multipart/mixed;deferSpec=20220824,application/json;q=0.9",
    },
    body: JSON.stringify({ query: text }),
  });
  const parts = await meros(response);
  const out = { contentType: response.headers.get("content-type"), parts: [] };
  if (!(Symbol.asyncIterator in Object(parts))) {
    out.parts.push({ json: true, body: await response.json() });
    return out;
  }
  for await (const part of parts) {
    out.parts.push({ json: part.json, body: part.body, headers: part.headers });
  }
  return out;
}

const apollo = await withApollo();
const parts = await withMeros();
console.log(JSON.stringify({ apollo, meros: parts }));
