//! Fragments shared by pages and pushed alone over the board WebSocket.

pub mod agent_skills;
pub mod agent_usage;
pub mod board;
pub mod board_menu;
pub mod board_palette;
pub mod form;
pub mod mentions;
pub mod plan;
pub mod pulls;
pub mod run_origin;
pub mod widgets;

pub use board::{
    board_column, board_columns_oob, card_removal_oob, column_count_oob, column_page_fragment,
    issue_card,
};
