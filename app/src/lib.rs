//! The fan-facing web app, in Leptos islands mode: every page is rendered on
//! the server (so the seat map shows before any WebAssembly arrives), and only
//! the interactive parts (`#[island]`s) are hydrated in the browser. A phone
//! downloads the code for the seat picker, not for the whole site.
#![recursion_limit = "256"]

pub mod actions;
pub mod admin;
pub mod charts;
pub mod client;
pub mod format;
pub mod islands;
pub mod links;
pub mod pages;
pub mod props;
#[cfg(feature = "ssr")]
pub mod seatmap;
#[cfg(feature = "ssr")]
pub mod server;
#[cfg(feature = "ssr")]
use frontrow_session as session;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{path, SsrMode};

pub use frontrow_model::AppError;
use pages::{
    AccountPage, BookingPage, CheckoutPage, ChooseRowPage, ChooseSectionPage, ChooseSectionsPage, EventPage, EventsPage, SectionPage, SignInPage,
    SignUpPage,
};

/// The HTML document around the app (server side only renders it).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let options = bundle_for_this_page(options);
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options=options.clone()/>
                {app_scripts(options)}
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// Staff pages hydrate from the staff bundle (the box office's islands and
/// the fans'); every other page from the fans' bundle, which leaves the box
/// office's code out.
fn bundle_for_this_page(#[allow(unused_mut)] mut options: LeptosOptions) -> LeptosOptions {
    #[cfg(feature = "ssr")]
    if use_context::<http::request::Parts>().is_some_and(|parts| parts.uri.path().starts_with("/admin")) {
        options.output_name = format!("{}_staff", options.output_name).into();
    }
    options
}

/// An event's pages start with the small first-pick module, so a seat can
/// be picked before the app has arrived; the app's own scripts wait in a
/// template until the first pick, or a moment after the page (see the
/// `frontrow-first-pick` crate). If the module cannot run, the loader puts
/// the app's scripts in at once. Every other page hydrates as usual.
fn app_scripts(options: LeptosOptions) -> AnyView {
    #[cfg(feature = "ssr")]
    let event_page = use_context::<http::request::Parts>().is_some_and(|parts| parts.uri.path().starts_with("/events/"));
    #[cfg(not(feature = "ssr"))]
    let event_page = false;
    if !event_page {
        return view! { <HydrationScripts options islands=true/> }.into_any();
    }
    let nonce = leptos::nonce::use_nonce();
    view! {
        <link rel="modulepreload" href=FIRST_PICK_JS nonce=nonce.clone()/>
        <link rel="preload" href=FIRST_PICK_WASM r#as="fetch" r#type="application/wasm" crossorigin="" nonce=nonce.clone()/>
        <template id="app-scripts"><HydrationScripts options islands=true/></template>
        <script type="module" nonce=nonce inner_html=FIRST_PICK_LOADER></script>
    }
    .into_any()
}

const FIRST_PICK_JS: &str = "/pkg/first_pick.js";
const FIRST_PICK_WASM: &str = "/pkg/first_pick_bg.wasm";
const FIRST_PICK_LOADER: &str = r#"import("/pkg/first_pick.js").then((m) => m.default({ module_or_path: "/pkg/first_pick_bg.wasm" })).catch(() => { const t = document.getElementById("app-scripts"); if (t) { t.remove(); document.head.append(t.content.cloneNode(true)); } });"#;

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="frontrow" href="/pkg/frontrow.css"/>
        <Title formatter=|page: String| if page.is_empty() { "frontrow".to_owned() } else { format!("{page} · frontrow") }/>
        <a class="skip-link" href="#main">"Skip to content"</a>
        <pages::SiteHeader/>
        <Router>
            <main id="main">
                // Async: the whole page (status code and title included) is
                // ready before the first byte, so a 404 is a real 404.
                <Routes fallback=|| view! { <pages::NotFound/> }>
                    <Route path=path!("") view=EventsPage ssr=SsrMode::Async/>
                    <Route path=path!("/events/:id") view=EventPage ssr=SsrMode::Async/>
                    <Route path=path!("/events/:id/sections") view=ChooseSectionsPage ssr=SsrMode::Async/>
                    <Route path=path!("/events/:id/sections/:section") view=SectionPage ssr=SsrMode::Async/>
                    <Route path=path!("/events/:id/sections/:section/rows") view=ChooseSectionPage ssr=SsrMode::Async/>
                    <Route path=path!("/events/:id/sections/:section/rows/:row") view=ChooseRowPage ssr=SsrMode::Async/>
                    <Route path=path!("/checkouts/:id") view=CheckoutPage ssr=SsrMode::Async/>
                    <Route path=path!("/bookings/:id") view=BookingPage ssr=SsrMode::Async/>
                    <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async/>
                    <Route path=path!("/signin") view=SignInPage ssr=SsrMode::Async/>
                    <Route path=path!("/signup") view=SignUpPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin") view=admin::StaffHomePage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/events/new") view=admin::NewEventPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/events/:id") view=admin::StaffEventPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/events/:id/waiting-room") view=admin::WaitingRoomRedirect ssr=SsrMode::Async/>
                    <Route path=path!("/admin/events/:id/seats") view=admin::SeatDeskPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/events/:id/dashboard") view=admin::DashboardPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/events/:id/audit") view=admin::AuditPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/bookings") view=admin::StaffBookingsPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/bookings/:id") view=admin::StaffBookingPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/checkin") view=admin::CheckinPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/payments") view=admin::PaymentsPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/layouts") view=admin::LayoutsPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/layouts/new") view=admin::NewLayoutPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/staff") view=admin::StaffAccountsPage ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
}
