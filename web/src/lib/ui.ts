/** Shared layout values, so every form and table looks the same (spec 2.4). */

/** The one label width of left-labelled forms. */
export const LABEL_WIDTH = 120;

/** How tall a table may grow before it scrolls inside itself (below the page header). */
export const TABLE_MAX_HEIGHT = "calc(100vh - 300px)";
