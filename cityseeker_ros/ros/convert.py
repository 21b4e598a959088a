"""Core types <-> ROS messages, as pure functions (message classes are plain Python: no rclpy,
no running graph; unit tests call these directly).

Images: view sources give RGB uint8 arrays. The `image_format` parameter of the nodes that
send views picks the wire format, one spelling everywhere (IMAGE_FORMATS):
- `raw` (the default): sensor_msgs/Image, rgb8, on the base topic. No encoding at all, and
  between processes on one host it crosses Fast DDS shared memory; benchmarks/RESULTS.md has
  the figures that chose it (PNG cost 20-60 ms per 640x480 view to encode).
- `png` (lossless, zlib level 1) and `jpeg` (lossy, `jpeg_quality`): sensor_msgs/CompressedImage
  on `<base>/compressed`, as image_transport names its compressed transport; for links where
  bytes cost more than CPU (a drone's radio) and for smaller bags.
Pillow encodes and decodes RGB, so no channel swap can creep in (the reference implementation
swapped red and blue). The compressed `format` string follows image_transport's convention,
"rgb8; jpeg compressed bgr8": the original encoding was rgb8 and any standard decoder
(OpenCV's gives BGR) recovers the colours. `wire_format` says which format a message used,
for the run record.
"""
from __future__ import annotations

import array
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Optional, Union

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Path
from sensor_msgs.msg import CompressedImage, Image, NavSatFix, NavSatStatus
from std_msgs.msg import Header

from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.infra.text import clean_text
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.view_set import PANORAMA_FRAME, EpisodeBrief, PanoramaEntry, ViewSet
from cityseeker_ros.core.tasks.environment import Observation
from cityseeker_ros.core.vehicles.airsim.frames import compass_to_enu_yaw, quat_from_yaw
from cityseeker_ros.ros.parameters import VIEW_IMAGE_FORMAT

# The image_format parameter's values: raw Image, or CompressedImage by Pillow format.
IMAGE_FORMATS = ("raw", "png", "jpeg")
_PILLOW_FORMATS = {"jpeg": "JPEG", "png": "PNG"}
RAW_ENCODING = "rgb8"
COMPRESSED_SUFFIX = "/compressed"  # image_transport's topic for the compressed transport
ViewImageMsg = Union[Image, CompressedImage]


# -- time --------------------------------------------------------------------------------------

def stamp_to_msg(stamp: Stamp) -> Time:
    return Time(sec=stamp.sec, nanosec=stamp.nanosec)


def stamp_from_msg(time: Time) -> Stamp:
    return Stamp(sec=int(time.sec), nanosec=int(time.nanosec))


def stamp_from_ns(ns: int) -> Stamp:
    return Stamp.from_ns(ns)


# -- observations ------------------------------------------------------------------------------

class ReceivedPanorama:
    """Observation.panorama on the receiving side: the panorama that came with the view set,
    decoded on first get() (as core PanoramaRef renders on first get()), so a policy that never
    shows it pays nothing for it."""

    def __init__(self, image: Union[np.ndarray, ViewImageMsg]) -> None:
        self._image, self._msg = (image, None) if isinstance(image, np.ndarray) else (None, image)

    def get(self) -> np.ndarray:
        if self._image is None:
            self._image = image_from_msg(self._msg)
            self._msg = None
        return self._image

    def __repr__(self) -> str:
        return "ReceivedPanorama()"


def observation_to_view_set(obs: Observation, task: EpisodeBrief, view_set_id: str, stamp: Stamp,
                            done: bool = False, panorama: Optional[np.ndarray] = None) -> ViewSet:
    """The view set of an observation; views that carry an image name the frame it is sent in,
    and so does `panorama` (the node's panorama, sent on the same topic) when given."""
    entry = (PanoramaEntry(PANORAMA_FRAME, int(panorama.shape[1]), int(panorama.shape[0]))
             if panorama is not None else None)
    return ViewSet.of_observation(obs, task, view_set_id, stamp, done, entry)


def view_set_images(view_set: ViewSet, received: Mapping[str, ViewImageMsg]) -> dict[str, Any]:
    """The images a policy gets, by frame id: the views decoded, the panorama left to decode on
    first use (view_set_to_observation wraps it in ReceivedPanorama)."""
    pano = view_set.panorama.frame_id if view_set.panorama is not None else None
    return {frame: image if frame == pano else image_from_msg(image) for frame, image in received.items()}


def view_set_to_observation(view_set: ViewSet,
                            images: Optional[Mapping[str, Union[np.ndarray, ViewImageMsg]]] = None) -> Observation:
    """The observation a policy acts on; `images` by frame id (missing: no image). The panorama's
    may be an array or its still-encoded message."""
    images = dict(images or {})
    pano = view_set.panorama.frame_id if view_set.panorama is not None else None
    if pano in images:
        images[pano] = ReceivedPanorama(images[pano])
    return view_set.to_observation(images)


# -- images ------------------------------------------------------------------------------------

def check_image_format(image_format: str, parameter: str = "image_format") -> str:
    """`image_format` if it is one of IMAGE_FORMATS, else a one-line error naming `parameter`."""
    if image_format not in IMAGE_FORMATS:
        raise ValueError(f"{parameter} must be one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")
    return image_format


def image_message_type(image_format: str) -> type:
    """The message class `image_format` travels as."""
    return Image if check_image_format(image_format) == "raw" else CompressedImage


def image_topic(base: str, image_format: str) -> str:
    """Where `image_format` images of the `base` topic go: raw on `base`, compressed on
    `base/compressed` (image_transport's names, so its republishers and viewers find them)."""
    return base if check_image_format(image_format) == "raw" else base + COMPRESSED_SUFFIX


def _rgb_array(rgb: np.ndarray) -> np.ndarray:
    array_ = np.asarray(rgb)
    if array_.dtype != np.uint8 or array_.ndim != 3 or array_.shape[2] != 3:
        raise ValueError(f"expected an RGB uint8 image (H x W x 3), got {array_.dtype} {array_.shape}")
    return np.ascontiguousarray(array_)


def encode_image(rgb: np.ndarray, image_format: str = "jpeg", quality: int = 90) -> tuple[str, bytes]:
    """(CompressedImage.format, bytes) for an RGB uint8 array (H x W x 3), `png` or `jpeg`."""
    from PIL import Image as PILImage

    if image_format not in _PILLOW_FORMATS:
        raise ValueError(f"compressed image format must be one of {', '.join(_PILLOW_FORMATS)}, got {image_format!r}")
    pixels = _rgb_array(rgb)
    buffer = io.BytesIO()
    # PNG at zlib level 1: lossless all the same, about 3x faster than the default level 6 on a
    # 2048x1024 panorama (0.36 s against 1.0 s here) for about 8% more bytes.
    options: dict[str, Any] = {"quality": int(quality)} if image_format == "jpeg" else {"compress_level": 1}
    PILImage.fromarray(pixels, mode="RGB").save(buffer, format=_PILLOW_FORMATS[image_format], **options)
    return f"{RAW_ENCODING}; {image_format} compressed bgr8", buffer.getvalue()


def decode_image(data: bytes) -> np.ndarray:
    """RGB uint8 array from JPEG or PNG bytes (the container says which)."""
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(bytes(data))) as image:
        return np.asarray(image.convert("RGB"))


def raw_image_msg(rgb: np.ndarray, stamp: Stamp, frame_id: str) -> Image:
    """rgb8, row-major without padding (what image_transport's raw transport sends). The pixels
    go in as an array.array, which the message takes without a per-byte check."""
    pixels = _rgb_array(rgb)
    h, w = pixels.shape[:2]
    msg = Image(header=Header(stamp=stamp_to_msg(stamp), frame_id=frame_id), height=h, width=w,
                encoding=RAW_ENCODING, is_bigendian=0, step=w * 3)
    data = array.array("B")
    data.frombytes(pixels.data)
    msg.data = data
    return msg


def image_to_msg(rgb: np.ndarray, stamp: Stamp, frame_id: str, image_format: str = VIEW_IMAGE_FORMAT,
                 quality: int = 90) -> ViewImageMsg:
    """A view image as `image_format` gives it: Image for `raw`, CompressedImage otherwise."""
    if check_image_format(image_format) == "raw":
        return raw_image_msg(rgb, stamp, frame_id)
    fmt, data = encode_image(rgb, image_format, quality)
    msg = CompressedImage(header=Header(stamp=stamp_to_msg(stamp), frame_id=frame_id), format=fmt)
    msg.data = array.array("B", data)
    return msg


def image_from_msg(msg: Any) -> np.ndarray:
    """RGB uint8 from a sensor_msgs Image (any encoding core.camera reads) or CompressedImage:
    rclpy's messages or a bag reader's, told apart by their fields."""
    from cityseeker_ros.core.sensing.camera.rosbag import image_to_rgb

    if hasattr(msg, "encoding"):
        if msg.encoding == RAW_ENCODING and msg.step == msg.width * 3:  # ours: one copy, writable as in process
            return np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3).copy()
        return image_to_rgb(msg, "sensor_msgs/msg/Image")
    return decode_image(bytes(msg.data))


def wire_format(msg: Any) -> str:
    """What a view image message says of its format, for the run record: `rgb8` (raw Image) or
    the CompressedImage's format string ("rgb8; jpeg compressed bgr8": lossy)."""
    return str(msg.encoding) if hasattr(msg, "encoding") else str(msg.format)


# -- poses -------------------------------------------------------------------------------------

def navsatfix(lat: float, lon: float, stamp: Stamp, frame_id: str) -> NavSatFix:
    """A street-graph node as a fix: altitude and covariance unknown."""
    return NavSatFix(header=Header(stamp=stamp_to_msg(stamp), frame_id=frame_id),
                     status=NavSatStatus(status=NavSatStatus.STATUS_FIX, service=NavSatStatus.SERVICE_GPS),
                     latitude=float(lat), longitude=float(lon), altitude=math.nan,
                     position_covariance_type=NavSatFix.COVARIANCE_TYPE_UNKNOWN)


def pose_stamped(east_m: float, north_m: float, heading_deg: float, stamp: Stamp, frame_id: str) -> PoseStamped:
    """ENU position (REP 103) facing compass `heading_deg` (clockwise from north): the yaw is
    counter-clockwise from east, so heading 0 (north) is yaw +pi/2."""
    q = quat_from_yaw(compass_to_enu_yaw(heading_deg))
    msg = PoseStamped(header=Header(stamp=stamp_to_msg(stamp), frame_id=frame_id))
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = float(east_m), float(north_m), 0.0
    o = msg.pose.orientation
    o.w, o.x, o.y, o.z = float(q.w), float(q.x), float(q.y), float(q.z)
    return msg


def path_msg(poses: Sequence[PoseStamped], stamp: Stamp, frame_id: str) -> Path:
    return Path(header=Header(stamp=stamp_to_msg(stamp), frame_id=frame_id), poses=list(poses))


# -- diagnostics -------------------------------------------------------------------------------

LEVELS = {"ok": DiagnosticStatus.OK, "warn": DiagnosticStatus.WARN, "error": DiagnosticStatus.ERROR,
          "stale": DiagnosticStatus.STALE}


def diagnostic_status(name: str, level: str, message: str, values: Mapping[str, Any],
                      hardware_id: str = "") -> DiagnosticStatus:
    """Text that ROS would refuse to encode (a lone surrogate in an error) is cleaned here."""
    return DiagnosticStatus(level=LEVELS[level], name=clean_text(name), message=clean_text(message),
                            hardware_id=clean_text(hardware_id),
                            values=[KeyValue(key=clean_text(k), value=clean_text(str(v))) for k, v in values.items()])


# -- guidance ---------------------------------------------------------------------------------

def guidance_msg(guidance: Guidance, view_set: ViewSet, stamp: Stamp) -> Guidance:
    """core.loop.guidance.Guidance stamped for the view set it answers (its text is the reason shown)."""
    return replace(guidance, view_set_id=view_set.view_set_id, episode_id=view_set.task.episode_id, stamp=stamp)
