// Apollo Gateway behind Apollo Server's standalone HTTP server, for graphfleet-bench.
// Usage: node server.mjs SUPERGRAPH HOST PORT   (GraphQL at /)
import { readFileSync } from "node:fs";
import { ApolloGateway } from "@apollo/gateway";
import { ApolloServer } from "@apollo/server";
import { startStandaloneServer } from "@apollo/server/standalone";

const [supergraph, host, port] = process.argv.slice(2);
if (!supergraph || !host || !port) {
  console.error("usage: node server.mjs SUPERGRAPH HOST PORT");
  process.exit(2);
}
const gateway = new ApolloGateway({ supergraphSdl: readFileSync(supergraph, "utf8") });
const server = new ApolloServer({ gateway, csrfPrevention: false });
const { url } = await startStandaloneServer(server, { listen: { host, port: Number(port) } });
console.log(`apollo-gateway ready at ${url}`);
