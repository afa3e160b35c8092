//! The API's one error type is the model's [`AppError`]: every failure is
//! answered as `{"error": code, "message": text, ...}` with its status, the
//! same error the server functions return to the app.

pub use frontrow_model::{AppError, ErrorKind};

pub type ApiResult<T> = Result<T, AppError>;
