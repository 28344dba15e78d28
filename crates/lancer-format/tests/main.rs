//! Integration tests of lancer-format: golden files written by pylance.

mod golden;
