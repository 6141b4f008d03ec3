//! A model in the loop: the two provider APIs mcpscope speaks (OpenAI-compatible
//! Chat Completions, which OpenAI, OpenRouter, Groq, Together, Mistral and
//! local servers such as Ollama, llama.cpp, vLLM and LM Studio all serve, and
//! Anthropic Messages), as state machines with no I/O inside.
//!
//! - [`provider`]: which API, where, which model, and where its key comes from;
//! - [`request`]: a conversation and the server's tools as each API wants them
//!   (a tool's inputSchema converted, with what had to change said);
//! - [`stream`]: a streamed answer (SSE) assembled event by event into a
//!   [`stream::Turn`]: its text, its tool calls with their arguments, why it
//!   stopped, the tokens it used.
//!
//! - [`chat_loop`]: the chat through a live session's tools, step by step;
//! - [`sampling`]: a server's sampling request as one turn, and the answer
//!   as its `CreateMessageResult`;
//! - [`record`]: a turn as the capture keeps it;
//! - [`compare`]: one prompt to several models, side by side.
//!
//! The HTTP client that carries them (`chat`), `mcpscope chat` and the
//! app's Chat mode build on these.

pub mod chat_loop;
pub mod compare;
pub mod provider;
pub mod record;
pub mod request;
pub mod sampling;
pub mod stream;
