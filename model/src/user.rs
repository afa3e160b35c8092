//! Accounts.

use serde::{Deserialize, Serialize};

use crate::ids::UserId;

/// What an account may do: fans buy; staff run events; admins also manage
/// staff accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "user_role", rename_all = "lowercase"))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Fan,
    Staff,
    Admin,
}

impl Role {
    pub fn is_staff(self) -> bool {
        matches!(self, Role::Staff | Role::Admin)
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fan" => Ok(Role::Fan),
            "staff" => Ok(Role::Staff),
            "admin" => Ok(Role::Admin),
            other => Err(format!("unknown role {other:?} (fan, staff or admin)")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct User {
    pub user_id: UserId,
    #[cfg_attr(feature = "openapi", schema(format = Email))]
    pub email: String,
    pub name: String,
    pub role: Role,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_and_rank() {
        assert_eq!("staff".parse::<Role>(), Ok(Role::Staff));
        assert!("root".parse::<Role>().is_err());
        assert!(Role::Admin.is_staff() && Role::Staff.is_staff() && !Role::Fan.is_staff());
    }
}
