//! Staff accounts (admins only): create, disable or enable, reset a password.

use frontrow_model::{AppError, StaffAccount};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::admin::actions::{ChangeAccount, CreateAccount};
use crate::admin::{refused, when, word, Frame};

#[server(prefix = "/_app")]
pub async fn load_accounts() -> Result<Vec<StaffAccount>, AppError> {
    let (engine, user) = crate::server::staff().await?;
    Ok(engine.staff_accounts(&user).await?)
}

#[component]
pub fn StaffAccountsPage() -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match load_accounts().await {
                    Err(e) => refused(e, "/admin/staff"),
                    Ok(accounts) => view! {
                        <Frame title="Staff accounts".to_owned() here="/admin/staff".to_owned()><Accounts accounts/></Frame>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Accounts(accounts: Vec<StaffAccount>) -> impl IntoView {
    view! {
        <table class="data">
            <caption>"Accounts"</caption>
            <thead><tr><th scope="col">"Email"</th><th scope="col">"Name"</th><th scope="col">"Role"</th><th scope="col">"Since"</th>
                <th scope="col">"State"</th><th scope="col">"Actions"</th></tr></thead>
            <tbody>
                {accounts.into_iter().map(|a| {
                    let id = a.user_id.to_string();
                    let (row_id, reset_id) = (id.clone(), id.clone());
                    view! {
                        <tr data-user-id=row_id data-email=a.email.clone()>
                            <th scope="row">{a.email.clone()}</th>
                            <td>{a.name}</td>
                            <td>{word(a.role)}</td>
                            <td>{when(a.created_at)}</td>
                            <td>{if a.disabled { "disabled" } else { "active" }}</td>
                            <td>
                                <form method="post" action=ChangeAccount::PATH class="inline">
                                    <input type="hidden" name="user_id" value=id/>
                                    <input type="hidden" name="disabled" value=if a.disabled { "false" } else { "true" }/>
                                    <button type="submit">{if a.disabled { "Enable" } else { "Disable" }}</button>
                                </form>
                                <form method="post" action=ChangeAccount::PATH class="inline">
                                    <input type="hidden" name="user_id" value=reset_id/>
                                    <label>"New password " <input type="password" name="password" minlength="8" maxlength="1024" autocomplete="new-password" required/></label>
                                    <button type="submit">"Reset password"</button>
                                </form>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <h2>"New account"</h2>
        <form class="stacked" method="post" action=CreateAccount::PATH>
            <label>"Email" <input type="email" name="email" required maxlength="254" autocomplete="off"/></label>
            <label>"Name" <input name="name" required maxlength="200"/></label>
            <label>"Password" <input type="password" name="password" required minlength="8" maxlength="1024" autocomplete="new-password"/></label>
            <label>"Role"
                <select name="role">
                    <option value="staff" selected>"Staff: runs events"</option>
                    <option value="admin">"Admin: also manages staff accounts"</option>
                </select>
            </label>
            <button class="primary" type="submit">"Create account"</button>
        </form>
    }
}
