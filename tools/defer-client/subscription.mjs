// Test client only: one subscription through Apollo Client's HttpLink, which speaks
// Apollo's multipart subscription protocol (Accept: multipart/mixed;subscriptionSpec=1.0).
// Prints one JSON line per result Apollo Client delivers ({"data":…,"errors":…}, the
// __typename fields its cache adds left out), then {"done":"complete"} or
// {"done":"error","error":…}.
// Usage: node subscription.mjs URL QUERY_TEXT
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client/core/index.js";

const [url, text] = process.argv.slice(2);
const write = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const apollo = new ApolloClient({ link: new HttpLink({ uri: url }), cache: new InMemoryCache() });
const timer = setTimeout(() => {
  write({ done: "error", error: { message: "not complete within 20 s" } });
  process.exit(2);
}, 20000);
apollo.subscribe({ query: gql(text), fetchPolicy: "no-cache" }).subscribe({
  next(result) {
    const data = JSON.parse(JSON.stringify(result.data ?? null, (k, v) => (k === "__typename" ? undefined : v)));
    write({ data, errors: result.errors ?? null });
  },
  error(e) {
    clearTimeout(timer);
    write({ done: "error", error: { message: String(e?.message ?? e) } });
    process.exit(1);
  },
  complete() {
    clearTimeout(timer);
    write({ done: "complete" });
    process.exit(0);
  },
});
