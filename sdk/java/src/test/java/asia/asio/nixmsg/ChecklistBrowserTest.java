package asia.asio.nixmsg;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

/** Checklist item 14 (spec 9 接入清单). */
class ChecklistBrowserTest {
  @Test
  @Disabled(
      "Checklist item 14 applies to the JavaScript SDK only: it loads the browser bundle in a page"
          + " served from another origin; the Java SDK has no browser build")
  void checklist14BrowserOnAnotherOrigin() {}
}
