// The migrations are embedded by `sqlx::migrate!`: build again when they change.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
