//! CLI engines: command lines and parsers on recorded transcripts.
