-- NOTIFY is only a doorbell: the payload is the topic name (never the event, which may exceed
-- NOTIFY's 8000-byte limit). Postgres delivers it at commit and folds duplicates within one
-- transaction, so a transaction that writes 1,000 events on one topic rings once.
CREATE OR REPLACE FUNCTION coord_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('coord_events', NEW.topic);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION coord_events_notify();
