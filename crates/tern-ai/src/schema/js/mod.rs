//! JS semantics the reference inherits from its runtime.

pub(crate) mod number;
pub(crate) mod string;
pub(crate) mod value;
