"""cityseeker_ros/core/infra"""
