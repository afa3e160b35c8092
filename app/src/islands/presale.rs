use frontrow_model::EventId;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos::task::spawn_local;

use crate::actions::{enter_presale_code, EnterPresaleCode};
use crate::client::browser::reload;

/// The presale's code form: a plain form posting to the server function
/// (works without JavaScript), answered in place once hydrated. A code that
/// opens the presale reloads the page, which then offers its seats.
#[island]
pub fn PresaleCodeForm(event_id: EventId) -> impl IntoView {
    let code = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let ready = RwSignal::new(false);
    Effect::new(move |_| ready.set(true));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            match enter_presale_code(event_id, code.get_untracked()).await {
                Ok(_) => return reload(),
                Err(e) => error.set(Some(e.message)),
            }
            busy.set(false);
        });
    };
    view! {
        <form class="presale-code" id="presale-code" method="post" action=EnterPresaleCode::PATH
            data-ready=move || ready.get().to_string() on:submit=submit>
            <input type="hidden" name="event_id" value=event_id.to_string()/>
            <label>"Presale code" <input type="text" name="code" autocomplete="off" autocapitalize="characters" spellcheck="false"
                required maxlength="64" on:input=move |ev| code.set(event_target_value(&ev))/></label>
            <button class="primary" type="submit" disabled=move || busy.get()>"Use code"</button>
            <div role="alert">{move || error.get().map(|e| view! { <p class="msg error">{e}</p> })}</div>
        </form>
    }
}
