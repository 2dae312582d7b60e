//! placeholder, filled in below
