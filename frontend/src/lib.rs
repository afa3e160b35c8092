//! WebAssembly entry point: hydrates the islands of the server-rendered page.

// The islands' exported entry points live in the app crate; link it.
use frontrow_app as _;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
}
