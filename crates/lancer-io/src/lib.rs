//! `lancer-io`: byte-range storage behind Lancer's readers.
