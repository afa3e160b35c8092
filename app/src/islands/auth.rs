use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos::task::spawn_local;

use crate::actions::{sign_in, sign_out, sign_up, SignIn, SignOut, SignUp};
use crate::client::browser::navigate;

/// Sign-in and sign-up: a plain form that posts to the server function and
/// is redirected (so it works without JavaScript), which the island takes
/// over once hydrated to answer in place.
#[island]
pub fn AuthForm(signup: bool, next: String, error: Option<String>) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let email = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let error = RwSignal::new(error);
    let busy = RwSignal::new(false);
    // Flips once hydrated, so tests (and styles) know the form is live.
    let ready = RwSignal::new(false);
    Effect::new(move |_| ready.set(true));
    let next_value = next.clone();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let next = Some(next_value.clone());
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            let answer = if signup {
                sign_up(name.get_untracked(), email.get_untracked(), password.get_untracked(), next).await
            } else {
                sign_in(email.get_untracked(), password.get_untracked(), next).await
            };
            match answer {
                Ok(to) => return navigate(&to),
                Err(e) => error.set(Some(e.message)),
            }
            busy.set(false);
        });
    };
    let action = if signup { SignUp::PATH } else { SignIn::PATH };
    view! {
        <form class="auth-form" method="post" action=action data-ready=move || ready.get().to_string() on:submit=submit>
            <input type="hidden" name="next" value=next/>
            {signup.then(|| view! {
                <label>"Name" <input type="text" name="name" autocomplete="name" required
                    on:input=move |ev| name.set(event_target_value(&ev))/></label>
            })}
            <label>"Email" <input type="email" name="email" autocomplete="email" required
                on:input=move |ev| email.set(event_target_value(&ev))/></label>
            <label>"Password" <input type="password" name="password" required minlength=if signup { "8" } else { "1" }
                autocomplete=if signup { "new-password" } else { "current-password" }
                on:input=move |ev| password.set(event_target_value(&ev))/></label>
            <button class="primary" type="submit" disabled=move || busy.get()>{if signup { "Create account" } else { "Sign in" }}</button>
            <div role="alert">{move || error.get().map(|e| view! { <p class="msg error">{e}</p> })}</div>
        </form>
    }
}

/// Sign out: a form posting to the server function (works without
/// JavaScript), answered in place once hydrated.
#[island]
pub fn SignOutButton() -> impl IntoView {
    let click = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        spawn_local(async move {
            let to = sign_out().await.unwrap_or_else(|_| "/".to_owned());
            navigate(&to);
        });
    };
    view! {
        <form class="sign-out-form" method="post" action=SignOut::PATH>
            <button class="sign-out" type="submit" on:click=click>"Sign out"</button>
        </form>
    }
}
