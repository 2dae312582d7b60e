// Test client only: Apollo Client's BatchHttpLink against the gateway URL given. Three
// queries issued together go out as one POST of a JSON array; prints, as JSON, each
// query's result (or error) and the HTTP exchanges the link made (how many operations
// each carried, the status). Usage: node batch.mjs URL
import { ApolloClient, InMemoryCache, gql } from "@apollo/client/core/index.js";
import { BatchHttpLink } from "@apollo/client/link/batch-http/index.js";

const [uri] = process.argv.slice(2);
const exchanges = [];
const recordingFetch = async (target, init) => {
  const sent = JSON.parse(init.body);
  const response = await fetch(target, init);
  exchanges.push({ operations: Array.isArray(sent) ? sent.length : null, status: response.status });
  return response;
};
const link = new BatchHttpLink({ uri, fetch: recordingFetch, batchMax: 10, batchInterval: 50 });
const apollo = new ApolloClient({ link, cache: new InMemoryCache({ addTypename: false }) });
const texts = [
  "query Ids { users { id } }",
  "query Names { users { name } }",
  "query Broken { users { nope } }",
];
const results = await Promise.all(
  texts.map((text) =>
    apollo
      .query({ query: gql(text), fetchPolicy: "no-cache", errorPolicy: "all" })
      .then((r) => ({ data: r.data ?? null, errors: (r.errors ?? []).map((e) => e.extensions?.code ?? e.message) }))
      .catch((e) => ({ failed: String(e) })),
  ),
);
console.log(JSON.stringify({ results, exchanges }));
