"""rosbag2 folders (metadata.yaml + one MCAP or sqlite3 file) written and read with `rosbags`.

Messages travel as CDR bytes: the recorder writes what DDS delivered (rclpy's raw
subscriptions) and the player publishes the bytes back, so no field is re-encoded on the way.
The typestore (ROS 2 Jazzy's standard messages) supplies each topic's message definition and
RIHS01 type hash, which `ros2 bag` and mcap-ros2-support need to decode the bag.

A bag is written into a hidden sibling folder and renamed into place when it is closed, so a
folder at the requested path is always a finished bag; a writer that crashed leaves only
`.NAME.partial-*` behind (its messages are in there, but without metadata.yaml or, for MCAP,
the summary section, nothing mistakes it for a complete bag).

In the ROS layer, not among the bag tools, because `cityseeker run bag` (ros/launcher.py) reads
the bags it made as well.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.ros import bag_interfaces

STORAGES: Registry = Registry("bag storage")
BAG_VERSION = 9  # rosbag2's metadata version of Jazzy
METADATA = "metadata.yaml"


@STORAGES.register("mcap")
def _mcap() -> Any:
    from rosbags.rosbag2 import StoragePlugin

    return StoragePlugin.MCAP


@STORAGES.register("sqlite3")
def _sqlite3() -> Any:
    from rosbags.rosbag2 import StoragePlugin

    return StoragePlugin.SQLITE3


def typestore() -> Any:
    """The message types of ROS 2 Jazzy, as rosbags knows them, plus cityseeker_interfaces'
    where that package is installed (ros/bag_interfaces.py)."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    if bag_interfaces.installed():
        bag_interfaces.register(store)
    return store


@dataclass(frozen=True)
class QosOffer:
    """A publisher's offered QoS as rosbag2 stores it per topic (the player's hint)."""

    reliable: bool = True
    transient_local: bool = True
    depth: int = 1

    def to_rosbags(self) -> Any:
        from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

        never = QosTime(sec=0x7FFFFFFF, nsec=0xFFFFFFFF)  # rclpy's "infinite" as rosbag2 writes it
        return Qos(history=QosHistory.KEEP_LAST, depth=self.depth,
                   reliability=QosReliability.RELIABLE if self.reliable else QosReliability.BEST_EFFORT,
                   durability=QosDurability.TRANSIENT_LOCAL if self.transient_local else QosDurability.VOLATILE,
                   deadline=never, lifespan=never, liveliness=QosLiveliness.AUTOMATIC,
                   liveliness_lease_duration=never, avoid_ros_namespace_conventions=False)


class BagWriter:
    """One bag being written. `close()` finishes it and moves it to `path`; `abort()` (or an
    exception inside a `with` block) removes what was written."""

    def __init__(self, path: Path, storage: str = "mcap") -> None:
        from rosbags.rosbag2 import Writer

        self.path = Path(path)
        if self.path.exists():
            raise ConfigError(f"{self.path}: already exists; bags are never overwritten")
        if not self.path.parent.is_dir():
            raise ConfigError(f"{self.path.parent}: no such folder for the bag")
        self.storage = storage
        plugin = STORAGES.create(storage)
        self._staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.partial-", dir=self.path.parent))
        self._writer = Writer(self._staging / self.path.name, version=BAG_VERSION, storage_plugin=plugin)
        self._writer.open()
        self._typestore = typestore()
        self._connections: dict[str, Any] = {}
        self.counts: dict[str, int] = {}

    def has_topic(self, topic: str) -> bool:
        return topic in self._connections

    def add_topic(self, topic: str, msgtype: str, offers: Sequence[QosOffer] = ()) -> None:
        if topic in self._connections:
            return
        if msgtype not in self._typestore.fielddefs:
            known = "" if bag_interfaces.installed() else f" ({bag_interfaces.PACKAGE} is not installed)"
            raise ConfigError(f"topic {topic}: message type {msgtype} is not a ROS 2 Jazzy standard type "
                              f"nor a {bag_interfaces.PACKAGE} type{known} (the bag needs its definition)")
        self._connections[topic] = self._writer.add_connection(
            topic, msgtype, typestore=self._typestore, offered_qos_profiles=[o.to_rosbags() for o in offers],
            **bag_interfaces.connection_definition(self._typestore, msgtype))  # action feedback topics
        self.counts[topic] = 0

    def write(self, topic: str, timestamp_ns: int, data: bytes) -> None:
        """CDR bytes received on `topic` (added first) at `timestamp_ns`."""
        self._writer.write(self._connections[topic], int(timestamp_ns), data)
        self.counts[topic] += 1

    def write_message(self, topic: str, timestamp_ns: int, message: Any) -> None:
        """A rosbags message object (tests and tools that build messages without ROS)."""
        msgtype = self._connections[topic].msgtype
        self.write(topic, timestamp_ns, bytes(self._typestore.serialize_cdr(message, msgtype)))

    def close(self) -> Path:
        self._writer.close()
        self._staging.joinpath(self.path.name).rename(self.path)  # same folder: atomic
        shutil.rmtree(self._staging, ignore_errors=True)
        return self.path

    def abort(self) -> None:
        self._writer.abort()
        shutil.rmtree(self._staging, ignore_errors=True)

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


@dataclass(frozen=True)
class BagMessage:
    topic: str
    msgtype: str
    timestamp_ns: int  # when the recorder received it
    data: bytes  # CDR


class BagReader:
    """A finished bag: its topics, and its messages in time order, raw or decoded."""

    def __init__(self, path: Path) -> None:
        from rosbags.rosbag2 import Reader

        self.path = Path(path)
        if not self.path.exists():
            raise ConfigError(f"{self.path}: no such bag")
        if self.path.is_dir() and not (self.path / METADATA).is_file():
            partial = " (an unfinished bag: its writer never closed it)" if ".partial-" in self.path.name else ""
            raise ConfigError(f"{self.path}: not a rosbag2 bag, no {METADATA}{partial}")
        try:
            self._reader = Reader(self.path)
            self._reader.open()
        except Exception as exc:  # rosbags' ReaderError and friends: a damaged or foreign file
            raise ConfigError(f"{self.path}: not a readable rosbag2 bag ({type(exc).__name__}: {exc})") from None
        self._typestore = typestore()

    @property
    def topics(self) -> dict[str, str]:
        """topic -> message type."""
        return {c.topic: c.msgtype for c in self._reader.connections}

    @property
    def message_count(self) -> int:
        return int(self._reader.message_count)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self._reader.connections:
            counts[c.topic] = counts.get(c.topic, 0) + int(c.msgcount)
        return counts

    def offered_qos(self, topic: str) -> list[Any]:
        """rosbags Qos entries the recorder stored for `topic` (empty: unknown)."""
        return [q for c in self._reader.connections if c.topic == topic
                for q in (getattr(c.ext, "offered_qos_profiles", None) or [])]

    def messages(self, topics: Optional[Iterable[str]] = None) -> Iterator[BagMessage]:
        wanted = None if topics is None else set(topics)
        connections = [c for c in self._reader.connections if wanted is None or c.topic in wanted]
        if not connections:
            return
        for connection, timestamp, data in self._reader.messages(connections=connections):
            yield BagMessage(connection.topic, connection.msgtype, int(timestamp), bytes(data))

    def decode(self, message: BagMessage) -> Any:
        """The message as a rosbags dataclass (fields named as in ROS)."""
        return self._typestore.deserialize_cdr(message.data, message.msgtype)

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> BagReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
