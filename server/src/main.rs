#[tokio::main]
async fn main() -> std::process::ExitCode {
    frontrow_server::cli::run().await
}
