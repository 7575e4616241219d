//! Reading an exec's output to its end, whatever way the connection ends.
//!
//! kube's exec (`kube-client`'s `api/remote_command.rs`) hands the output over in-memory
//! pipes that a reader sees end only when the connection closes cleanly: when it breaks
//! (the server closes while standard input is still being sent, a reset), the pipes are
//! dropped without an end and a reader waiting for one waits forever (`kubectl fdb exec`
//! fed 200 MB of standard input hung so). Here the end of the exec is its final `Status`
//! (or the loss of it): after it, what is left in the pipes is taken and nothing is
//! awaited.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::AttachedProcess;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};

/// How an exec's output could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The command printed more than the caller keeps.
    #[error("the command printed more than {limit} bytes on {stream} (the most kept); stopped")]
    TooLarge {
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The connection ended without the command's final status.
    #[error("the connection ended before the command's exit status: {0}")]
    Lost(String),
    /// Writing the output here failed.
    #[error("writing the command's {stream}: {error}")]
    Write {
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// What failed.
        error: std::io::Error,
    },
}

/// One output stream of the exec and where it goes.
struct Stream<'a, W> {
    name: &'static str,
    reader: Option<tokio::io::ReadHalf<tokio::io::SimplexStream>>,
    sink: &'a mut W,
    written: usize,
    limit: usize,
}

impl<W: AsyncWrite + Unpin> Stream<'_, W> {
    /// Writes a chunk read from the exec; past the limit, an error.
    async fn take(&mut self, chunk: &[u8]) -> Result<(), OutputError> {
        self.written += chunk.len();
        if self.written > self.limit {
            return Err(OutputError::TooLarge {
                stream: self.name,
                limit: self.limit,
            });
        }
        let name = self.name;
        let write = async {
            self.sink.write_all(chunk).await?;
            self.sink.flush().await
        };
        write.await.map_err(|error| OutputError::Write {
            stream: name,
            error,
        })
    }

    /// Takes what the pipe holds now, without waiting for more (the exec has ended).
    async fn take_rest(&mut self) -> Result<(), OutputError> {
        let mut buffer = vec![0u8; 8192];
        while let Some(reader) = self.reader.as_mut() {
            let read = std::future::poll_fn(|cx| {
                let mut filled = ReadBuf::new(&mut buffer);
                match Pin::new(&mut *reader).poll_read(cx, &mut filled) {
                    Poll::Ready(Ok(())) => Poll::Ready(filled.filled().len()),
                    Poll::Ready(Err(_)) | Poll::Pending => Poll::Ready(0),
                }
            })
            .await;
            if read == 0 {
                self.reader = None;
            } else {
                let chunk = buffer[..read].to_vec();
                self.take(&chunk).await?;
            }
        }
        Ok(())
    }
}

/// Reads `attached`'s standard output into `out` and its standard error into `err`
/// (each up to `limit` bytes), until the exec's final status; returns that status.
/// Past the limit the exec is stopped; a connection that breaks is an error, never a
/// wait.
pub async fn read_to_status<O, E>(
    mut attached: AttachedProcess,
    out: &mut O,
    err: &mut E,
    limit: usize,
) -> Result<Option<Status>, OutputError>
where
    O: AsyncWrite + Unpin,
    E: AsyncWrite + Unpin,
{
    let mut stdout = Stream {
        name: "stdout",
        reader: attached.stdout(),
        sink: out,
        written: 0,
        limit,
    };
    let mut stderr = Stream {
        name: "stderr",
        reader: attached.stderr(),
        sink: err,
        written: 0,
        limit,
    };
    let status: Pin<Box<dyn Future<Output = Option<Status>> + Send>> = match attached.take_status()
    {
        Some(status) => Box::pin(status),
        None => Box::pin(std::future::ready(None)),
    };
    let copied = copy_until(&mut stdout, &mut stderr, status).await;
    let status = match copied {
        Ok(status) => status,
        Err(error) => {
            attached.abort();
            return Err(error);
        }
    };
    // The status came (the exec's loop ends right after it) or the loop has ended
    // without it: the join is prompt, and tells a clean end from a broken one.
    let ended = attached.join().await;
    stdout.take_rest().await?;
    stderr.take_rest().await?;
    match (status, ended) {
        (None, Err(error)) => Err(OutputError::Lost(crate::error::one_line(
            &error.to_string(),
        ))),
        (status, _) => Ok(status),
    }
}

/// Copies both streams as their chunks come, until `status` resolves.
async fn copy_until<O, E>(
    stdout: &mut Stream<'_, O>,
    stderr: &mut Stream<'_, E>,
    mut status: Pin<Box<dyn Future<Output = Option<Status>> + Send>>,
) -> Result<Option<Status>, OutputError>
where
    O: AsyncWrite + Unpin,
    E: AsyncWrite + Unpin,
{
    let (mut out_buffer, mut err_buffer) = (vec![0u8; 8192], vec![0u8; 8192]);
    loop {
        // A read is cancel-safe: a branch not taken loses nothing.
        tokio::select! {
            read = read_some(&mut stdout.reader, &mut out_buffer) => match read {
                Some(read) => stdout.take(&out_buffer[..read]).await?,
                None => stdout.reader = None,
            },
            read = read_some(&mut stderr.reader, &mut err_buffer) => match read {
                Some(read) => stderr.take(&err_buffer[..read]).await?,
                None => stderr.reader = None,
            },
            status = &mut status => return Ok(status),
        }
    }
}

/// The next chunk of a pipe (`None` at its end); never resolves for a pipe already done.
async fn read_some(
    reader: &mut Option<tokio::io::ReadHalf<tokio::io::SimplexStream>>,
    buffer: &mut [u8],
) -> Option<usize> {
    match reader.as_mut() {
        Some(reader) => match reader.read(buffer).await {
            Ok(0) | Err(_) => None,
            Ok(read) => Some(read),
        },
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_rest_of_a_pipe_dropped_without_an_end_is_taken_without_waiting() {
        let (reader, mut writer) = tokio::io::simplex(1024);
        writer.write_all(b"last words").await.unwrap();
        // Dropped, not shut down: what kube does when the connection breaks.
        drop(writer);
        let mut sink = Vec::new();
        let mut stream = Stream {
            name: "stdout",
            reader: Some(reader),
            sink: &mut sink,
            written: 0,
            limit: 1024,
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), stream.take_rest())
            .await
            .expect("taking the rest waited for an end that never comes")
            .unwrap();
        assert_eq!(sink, b"last words");
    }

    #[tokio::test]
    async fn output_past_the_limit_is_an_error_naming_it() {
        let mut sink = Vec::new();
        let mut stream = Stream {
            name: "stdout",
            reader: None,
            sink: &mut sink,
            written: 0,
            limit: 4,
        };
        stream.take(b"abcd").await.unwrap();
        let error = stream.take(b"e").await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "the command printed more than 4 bytes on stdout (the most kept); stopped"
        );
    }
}
