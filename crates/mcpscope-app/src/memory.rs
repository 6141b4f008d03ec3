//! Giving freed memory back to the system. Loading a large capture and
//! linting it on workers allocates and frees hundreds of megabytes (the
//! loader's batches, the correlators' maps); glibc's malloc keeps freed
//! pages in its arenas, so the app's resident size stayed at the peak of the
//! load (2.1x a 277 MB capture) long after the work was done.

/// Returns freed heap pages to the system (glibc `malloc_trim`).
pub fn give_back() {
    mcpscope_core::platform::process::give_freed_memory_back();
}
