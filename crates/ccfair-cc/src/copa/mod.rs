//! Copa (Arun & Balakrishnan, NSDI 2018). See `mod.rs` of the full module.

pub mod window;
