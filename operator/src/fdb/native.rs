//! The lock keys and deny list through the native FoundationDB client (feature
//! `native-client`, links `libfdb_c`). The caller boots the client network
//! (`foundationdb::boot`) once per process before using it.

use std::sync::Arc;

use foundationdb::options::TransactionOption;
use foundationdb::{Database, RangeOption, Transaction};

use super::error::AdminError;
use super::locks::{
    DENY_LIST_PREFIX, GLOBAL_LOCK_KEY, LockValue, deny_list_id, deny_list_key, deny_list_range_end,
};

/// Reads and writes the operator's lock keys in one transaction per call.
#[derive(Clone)]
pub struct NativeLockStore {
    database: Arc<Database>,
}

impl std::fmt::Debug for NativeLockStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeLockStore").finish_non_exhaustive()
    }
}

fn failed(command: &str, error: impl std::fmt::Display) -> AdminError {
    AdminError::Failed {
        command: command.to_owned(),
        code: None,
        stderr: error.to_string(),
    }
}

impl NativeLockStore {
    /// Opens the database of a cluster file.
    pub fn open(cluster_file: &str) -> Result<Self, AdminError> {
        let database = Database::from_path(cluster_file)
            .map_err(|error| failed(&format!("open {cluster_file}"), error))?;
        Ok(Self {
            database: Arc::new(database),
        })
    }

    fn transaction(&self, command: &str) -> Result<Transaction, AdminError> {
        let transaction = self
            .database
            .create_trx()
            .map_err(|error| failed(command, error))?;
        transaction
            .set_option(TransactionOption::AccessSystemKeys)
            .map_err(|error| failed(command, error))?;
        Ok(transaction)
    }

    /// The global lock, if set.
    pub async fn read_lock(&self) -> Result<Option<LockValue>, AdminError> {
        let command = "native get lock";
        let transaction = self.transaction(command)?;
        let value = transaction
            .get(GLOBAL_LOCK_KEY, false)
            .await
            .map_err(|error| failed(command, error))?;
        value
            .map(|bytes| LockValue::decode(&bytes))
            .transpose()
            .map_err(|error| AdminError::InvalidResponse {
                command: command.to_owned(),
                detail: error.to_string(),
            })
    }

    /// Writes the global lock.
    pub async fn write_lock(&self, lock: &LockValue) -> Result<(), AdminError> {
        let command = "native set lock";
        let transaction = self.transaction(command)?;
        transaction.set(GLOBAL_LOCK_KEY, &lock.encode());
        transaction
            .commit()
            .await
            .map(drop)
            .map_err(|error| failed(command, error))
    }

    /// The operator IDs on the deny list.
    pub async fn deny_list(&self) -> Result<Vec<String>, AdminError> {
        let command = "native getrange denyList";
        let transaction = self.transaction(command)?;
        let range = RangeOption::from((DENY_LIST_PREFIX.to_vec(), deny_list_range_end()));
        let values = transaction
            .get_range(&range, 1, false)
            .await
            .map_err(|error| failed(command, error))?;
        Ok(values
            .iter()
            .filter_map(|pair| deny_list_id(pair.key()))
            .collect())
    }

    /// Adds and removes deny list entries.
    pub async fn update_deny_list(
        &self,
        add: &[String],
        remove: &[String],
    ) -> Result<(), AdminError> {
        let command = "native update denyList";
        let transaction = self.transaction(command)?;
        for id in add {
            transaction.set(&deny_list_key(id), id.as_bytes());
        }
        for id in remove {
            transaction.clear(&deny_list_key(id));
        }
        transaction
            .commit()
            .await
            .map(drop)
            .map_err(|error| failed(command, error))
    }
}
