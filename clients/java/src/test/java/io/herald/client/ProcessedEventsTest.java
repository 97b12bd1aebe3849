package io.herald.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ProcessedEventsTest {

  @Test
  @DisplayName("an event is done per consumer; one still running is busy; one that failed may run again; the oldest are forgotten")
  void claims() {
    ProcessedEvents processed = new ProcessedEvents(2);
    assertEquals(ProcessedEvents.Claim.NEW, processed.claim("billing", "e1"));
    assertEquals(ProcessedEvents.Claim.BUSY, processed.claim("billing", "e1"));
    assertEquals(ProcessedEvents.Claim.NEW, processed.claim("audit", "e1"), "another consumer's delivery of the same event");
    processed.release("billing", "e1", true);
    assertEquals(ProcessedEvents.Claim.DONE, processed.claim("billing", "e1"));
    processed.release("audit", "e1", false);
    assertEquals(ProcessedEvents.Claim.NEW, processed.claim("audit", "e1"), "a failed run does not count");
    processed.release("audit", "e1", true);

    processed.claim("billing", "e2");
    processed.release("billing", "e2", true);
    assertTrue(processed.contains("audit", "e1"));
    assertFalse(processed.contains("billing", "e1"), "capacity 2: the oldest was forgotten");
  }
}
