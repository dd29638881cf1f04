//! W7 baseline: an empty `main` (the compiled counterpart of `node -e 0`).

fn main() {}
