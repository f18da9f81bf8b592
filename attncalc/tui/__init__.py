"""The full-screen walk (Textual). Imported only when `attncalc walk` runs on a terminal."""
