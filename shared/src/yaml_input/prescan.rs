//! A linear pre-scan of YAML text that measures how deeply it nests, before the text
//! reaches the YAML parser.
//!
//! The parser (libyaml) spends time proportional to the flow nesting depth on every
//! token, so `[[[[...]]]]` 100 000 levels deep takes minutes before any recursion
//! limit can fire. This scan follows libyaml's own lexical rules (quoted, plain and
//! block scalars, comments, anchors, tags, block indentation and flow brackets) so that
//! a bracket inside a string is not counted, but every real one is: where this scan and
//! libyaml could disagree, it counts the bracket (a false alarm on an absurd document
//! rather than a minutes-long parse). Depth is block levels (libyaml's indentation
//! stack) plus flow levels (open brackets).

/// Scans `text`; returns the 1-based line where the nesting first goes deeper than
/// `limit`, if it does.
pub(crate) fn excess_nesting_line(text: &str, limit: usize) -> Option<usize> {
    let mut scan = Scan {
        bytes: text.as_bytes(),
        pos: 0,
        line: 1,
        column: 0,
        flow: 0,
        indents: Vec::new(),
        pending_key: None,
        limit,
    };
    scan.run()
}

struct Scan<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// 1-based line of `pos`.
    line: usize,
    /// 0-based column of `pos`, in characters.
    column: usize,
    /// Open flow collections.
    flow: usize,
    /// libyaml's block indentation stack (columns).
    indents: Vec<usize>,
    /// Line and column of a token that may turn out to be a block mapping key.
    pending_key: Option<(usize, usize)>,
    limit: usize,
}

fn is_blank_or_break(byte: Option<u8>) -> bool {
    matches!(byte, None | Some(b' ' | b'\t' | b'\n' | b'\r'))
}

fn is_flow_indicator(byte: u8) -> bool {
    matches!(byte, b',' | b'[' | b']' | b'{' | b'}')
}

impl Scan<'_> {
    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos + offset).copied()
    }

    /// Moves past one byte, keeping line and column (UTF-8 continuation bytes do not
    /// start a character).
    fn bump(&mut self) {
        let Some(byte) = self.peek(0) else { return };
        self.pos += 1;
        match byte {
            b'\n' => {
                self.line += 1;
                self.column = 0;
            }
            b'\r' => {
                if self.peek(0) != Some(b'\n') {
                    self.line += 1;
                    self.column = 0;
                }
            }
            0x80..=0xBF => {}
            _ => self.column += 1,
        }
    }

    fn at_break(&self) -> bool {
        matches!(self.peek(0), Some(b'\n' | b'\r'))
    }

    fn skip_to_line_end(&mut self) {
        while self.peek(0).is_some() && !self.at_break() {
            self.bump();
        }
    }

    fn at_document_marker(&self) -> bool {
        self.column == 0
            && (self.bytes[self.pos..].starts_with(b"---")
                || self.bytes[self.pos..].starts_with(b"..."))
            && is_blank_or_break(self.peek(3))
    }

    fn depth(&self) -> usize {
        self.indents.len() + self.flow
    }

    fn too_deep(&self) -> Option<usize> {
        (self.depth() > self.limit).then_some(self.line)
    }

    /// libyaml's `roll_indent`: a block collection starts at `column`.
    fn roll(&mut self, column: usize) {
        if self.indents.last().is_none_or(|top| column > *top) {
            self.indents.push(column);
        }
    }

    fn note_key_candidate(&mut self) {
        if self.flow == 0 && self.pending_key.is_none() {
            self.pending_key = Some((self.line, self.column));
        }
    }

    fn run(&mut self) -> Option<usize> {
        loop {
            self.skip_to_token();
            let byte = self.peek(0)?;
            if self.line_start_consumed(byte) {
                continue;
            }
            if let Some(line) = self.token(byte) {
                return Some(line);
            }
        }
    }

    /// Closes indentation levels and stale key candidates at a new token; consumes a
    /// directive line or a document marker (returns true then).
    fn line_start_consumed(&mut self, byte: u8) -> bool {
        if self.flow == 0 {
            while self.indents.last().is_some_and(|top| *top > self.column) {
                self.indents.pop();
            }
        }
        if self.pending_key.is_some_and(|(line, _)| line != self.line) {
            self.pending_key = None;
        }
        if self.column == 0 && byte == b'%' {
            self.skip_to_line_end();
            return true;
        }
        if self.at_document_marker() {
            if self.flow == 0 {
                self.indents.clear();
            }
            self.pending_key = None;
            for _ in 0..3 {
                self.bump();
            }
            return true;
        }
        false
    }

    /// Consumes one token starting with `byte`; returns the line where nesting got too
    /// deep, if it did.
    fn token(&mut self, byte: u8) -> Option<usize> {
        let blank_after = is_blank_or_break(self.peek(1));
        match byte {
            b'[' | b'{' => {
                self.note_key_candidate();
                self.flow += 1;
                self.bump();
                return self.too_deep();
            }
            b']' | b'}' => {
                self.flow = self.flow.saturating_sub(1);
                self.bump();
            }
            b',' => self.bump(),
            b'-' if blank_after => {
                if self.flow == 0 {
                    self.roll(self.column);
                }
                self.pending_key = None;
                self.bump();
                return self.too_deep();
            }
            b'?' | b':' if self.flow > 0 || blank_after => {
                if self.flow == 0 {
                    let key = if byte == b'?' {
                        Some((self.line, self.column))
                    } else {
                        self.pending_key
                    };
                    if let Some((_, column)) = key {
                        self.roll(column);
                    }
                }
                self.pending_key = None;
                self.bump();
                return self.too_deep();
            }
            b'*' | b'&' => {
                self.note_key_candidate();
                self.bump();
                while self
                    .peek(0)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                {
                    self.bump();
                }
            }
            b'!' => {
                self.note_key_candidate();
                while !is_blank_or_break(self.peek(0))
                    && self.peek(0).is_some_and(|b| !is_flow_indicator(b))
                {
                    self.bump();
                }
            }
            b'|' | b'>' if self.flow == 0 => self.block_scalar(),
            b'\'' | b'"' => {
                self.note_key_candidate();
                self.quoted(byte);
            }
            _ => {
                self.note_key_candidate();
                self.plain();
            }
        }
        None
    }

    /// Skips blanks, comments and line breaks up to the next token.
    fn skip_to_token(&mut self) {
        loop {
            match self.peek(0) {
                Some(b' ' | b'\t') => self.bump(),
                Some(b'#') => self.skip_to_line_end(),
                Some(b'\n' | b'\r') => self.bump(),
                _ => return,
            }
        }
    }

    /// A single- or double-quoted scalar (it may span lines).
    fn quoted(&mut self, quote: u8) {
        self.bump();
        while let Some(byte) = self.peek(0) {
            if self.at_document_marker() {
                return;
            }
            if quote == b'"' && byte == b'\\' {
                self.bump();
                self.bump();
                continue;
            }
            if byte == quote {
                if quote == b'\'' && self.peek(1) == Some(b'\'') {
                    self.bump();
                    self.bump();
                    continue;
                }
                self.bump();
                return;
            }
            self.bump();
        }
    }

    /// A plain scalar: ends at `: `, ` #`, a flow indicator inside a flow collection,
    /// or a line break not followed by a line indented deeper than the current block.
    fn plain(&mut self) {
        let indent = self.indents.last().map_or(0, |top| top + 1);
        loop {
            if self.at_document_marker() || self.peek(0) == Some(b'#') {
                return;
            }
            while let Some(byte) = self.peek(0) {
                if is_blank_or_break(Some(byte)) {
                    break;
                }
                // As libyaml: `:` ends it before a blank (or, inside a flow collection,
                // before a flow indicator, which libyaml then refuses); elsewhere `:` and
                // quotes are part of the scalar.
                let ends = (byte == b':'
                    && (is_blank_or_break(self.peek(1))
                        || (self.flow > 0 && self.peek(1).is_some_and(is_flow_indicator))))
                    || (self.flow > 0 && is_flow_indicator(byte));
                if ends {
                    return;
                }
                self.bump();
            }
            if self.peek(0).is_none() {
                return;
            }
            // Blanks and line breaks; the scalar goes on only on a line indented deeper
            // than the current block (any line inside a flow collection).
            let mut broke = false;
            while let Some(byte @ (b' ' | b'\t' | b'\n' | b'\r')) = self.peek(0) {
                broke |= byte == b'\n' || byte == b'\r';
                self.bump();
            }
            if self.peek(0).is_none() || (broke && self.flow == 0 && self.column < indent) {
                return;
            }
        }
    }

    /// A literal (`|`) or folded (`>`) block scalar: its header, then every line
    /// indented at least as deep as its content (blank lines included).
    fn block_scalar(&mut self) {
        let parent = self.indents.last().copied();
        self.bump();
        let mut increment = 0;
        for _ in 0..2 {
            match self.peek(0) {
                Some(b'+' | b'-') => self.bump(),
                Some(digit @ b'1'..=b'9') => {
                    increment = usize::from(digit - b'0');
                    self.bump();
                }
                _ => break,
            }
        }
        self.skip_to_line_end();
        if self.peek(0).is_none() {
            return;
        }
        self.bump();
        let minimum = parent.map_or(1, |p| p + 1);
        let mut indent = if increment > 0 {
            parent.map_or(increment, |p| p + increment)
        } else {
            0
        };
        loop {
            let line_start = (self.pos, self.line, self.column);
            while self.peek(0) == Some(b' ') && (indent == 0 || self.column < indent) {
                self.bump();
            }
            if self.at_break() {
                self.bump();
                continue;
            }
            if self.peek(0).is_none() {
                return;
            }
            if indent == 0 {
                // The first line with content sets the indentation.
                indent = self.column.max(minimum);
            }
            if self.column < indent || self.at_document_marker() {
                // Not content: the next token starts on this line.
                (self.pos, self.line, self.column) = line_start;
                return;
            }
            self.skip_to_line_end();
            if self.peek(0).is_none() {
                return;
            }
            self.bump();
        }
    }
}
