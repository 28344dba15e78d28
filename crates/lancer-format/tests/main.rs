//! Integration tests of lancer-format.
