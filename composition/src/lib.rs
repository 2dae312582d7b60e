//! Federation v2 composition: subgraph SDLs → Apollo-format supergraph or precise errors.
