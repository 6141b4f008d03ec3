fn main() -> std::process::ExitCode {
    mcpscope::cli::main()
}
