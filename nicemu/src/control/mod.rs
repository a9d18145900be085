// SPDX-License-Identifier: Apache-2.0
//! The control socket (`--control PATH`) and its client (`nicemu ctl`):
//! JSON lines over a unix socket, one request, one response.

pub mod client;
pub mod protocol;
pub mod server;
