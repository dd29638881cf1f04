//! # tern-proxy
//!
//! The proxy protocol of the Pi agent core (`streamProxy` in `@earendil-works/pi-agent-core`
//! 1.6): an app sends its model requests to its own server, which holds the provider keys,
//! and the server streams the events back without their `partial` message, which the client
//! rebuilds.
//!
//! - [`ProxyStreamFn`] (feature `client`): a [`StreamFn`](tern_ai::StreamFn) that posts to
//!   `{proxyUrl}/api/stream` with a bearer token, as the reference's `streamProxy` does.
//! - [`ProxyServer`] (feature `server`): an [`axum::Router`] serving that protocol from any
//!   stream function, with a hook that checks the token.
//! - [`wire`]: the request body, the events and the line format both sides share.

#![warn(missing_docs)]

pub mod wire;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
pub mod server;

#[cfg(feature = "client")]
pub use client::{ProxyClientError, ProxyStreamFn};
#[cfg(feature = "server")]
pub use server::ProxyServer;

/// The axum version the server is built on, for serving and nesting its router.
#[cfg(feature = "server")]
pub use axum;
