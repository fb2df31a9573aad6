//! The parts of an operation every frontend shares beyond its shape and
//! scope: reading a range request (`range`), a `submit_many` batch
//! (`submit`) and running an `import` (`import`).

pub mod import;
pub mod range;
pub mod submit;
