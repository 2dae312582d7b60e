//! The headers subgraph requests carry: one set for every subgraph, and their own for
//! subgraphs whose header rules differ.

use http::HeaderMap;

#[derive(Debug, Default, Clone)]
pub struct SubgraphHeaders {
    /// Headers for subgraphs without rules of their own.
    pub all: HeaderMap,
    /// Subgraphs with rules of their own: (subgraph name, its headers).
    pub own: Vec<(String, HeaderMap)>,
}

impl SubgraphHeaders {
    /// The same headers for every subgraph.
    pub fn same(all: HeaderMap) -> Self {
        Self {
            all,
            own: Vec::new(),
        }
    }

    /// The headers of a request to subgraph `name`.
    pub fn for_subgraph(&self, name: &str) -> &HeaderMap {
        self.own
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&self.all, |(_, h)| h)
    }
}
