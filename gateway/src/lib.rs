//! graphfleet gateway: supergraph → API schema; parse/validate → plan → execute → respond.
